"""HD551 env.library_mismatch: User-space libraries disagree: an extension built on a newer system
(glibc, libstdc++), against another torch (undefined C++ symbols), or for a CUDA runtime that is
not here."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import NamedTuple

from hangdoctor.analysis.job import JobView
from hangdoctor.analysis.logs import LogKind, LogMatch
from hangdoctor.i18n import N_, _
from hangdoctor.rules._log_rule import LogKindsRule
from hangdoctor.rules.confidence import Confidence
from hangdoctor.rules.finding import Finding
from hangdoctor.rules.log_helpers import cite, clip
from hangdoctor.taxonomy import Category


def _module(path: str) -> str:
    """`flash_attn_2_cuda` from `.../flash_attn_2_cuda.cpython-310-x86_64-linux-gnu.so`."""
    return re.sub(r"(\.cpython-[^/]*|\.abi3)?\.so[\w.]*$", "", path.rsplit("/", 1)[-1])


def _symbol_owner(symbol: str) -> str | None:
    if re.match(r"_ZN?K?\d*(?:3c10|2at|5torch|4c10d)", symbol.replace("_ZNK", "_ZN")):
        return N_("PyTorch (it was compiled against a different torch version)")
    for prefix, owner in (
        ("nccl", "NCCL"),
        ("cudnn", "cuDNN"),
        ("cublas", "cuBLAS"),
        ("cuda", N_("the CUDA runtime")),
        ("Py", N_("the Python interpreter")),
    ):
        if symbol.startswith(prefix):
            return owner
    return None


class _Told(NamedTuple):
    """What the finding says about the library that does not fit."""

    title: str
    explanation: str
    fixes: tuple[str, ...]


def _symbol_version_missing(fields: Mapping[str, str]) -> _Told:
    """A binary needs a symbol version (GLIBC_2.34, GLIBCXX_3.4.30) the system library lacks."""
    version, library = fields["version"], fields["library"]
    needed_by = fields.get("required_by")
    who = f"`{_module(needed_by)}`" if needed_by else _("a binary")
    title = _(
        "{who} needs {version}, which {library} does not provide",
        who=who,
        version=version,
        library=library,
    )
    if version.startswith("GLIBCXX") or version.startswith("CXXABI"):
        explanation = _(
            "{who} was built with a newer C++ compiler than the libstdc++ loaded here ({library}).",
            who=who,
            library=library,
        )
        fixes = (
            _(
                "Load a newer libstdc++: in conda, `conda install -c conda-forge "
                "libstdcxx-ng` and make sure the env's lib comes first "
                "(LD_LIBRARY_PATH=$CONDA_PREFIX/lib); or use a newer base image."
            ),
            _("Or install a build of {who} made for this system.", who=who),
        )
    else:
        explanation = _(
            "{who} was built on a newer Linux (glibc with {version}) than "
            "this machine or container has (`ldd --version`).",
            who=who,
            version=version,
        )
        fixes = (
            _(
                "Install a wheel of {who} built for this glibc (a manylinux tag not "
                "newer than `ldd --version`), or build it here from source "
                "(`pip install --no-binary :all: <package>`).",
                who=who,
            ),
            _("Or run in a container with a newer base image (e.g. Ubuntu 22.04 has glibc 2.35)."),
        )
    return _Told(title, explanation, fixes)


def _undefined_symbol(fields: Mapping[str, str]) -> _Told:
    """An extension expects a symbol no loaded library has: built against another torch."""
    module = _module(fields["library"])
    owner = _symbol_owner(fields["symbol"])
    title = _(
        "`{module}` does not match the installed libraries (undefined symbol)",
        module=module,
    )
    symbol = clip(fields["symbol"])[:120]
    explanation = (
        _(
            "The extension `{module}` expects a symbol that the loaded "
            "libraries do not have ({symbol}): it belongs to {owner}.",
            module=module,
            symbol=symbol,
            owner=_(owner),
        )
        if owner
        else _(
            "The extension `{module}` expects a symbol that the loaded "
            "libraries do not have ({symbol}).",
            module=module,
            symbol=symbol,
        )
    )
    fixes = (
        _(
            "Rebuild `{module}` against the installed torch: `pip uninstall -y "
            "<package> && pip install <package> --no-build-isolation --no-cache-dir`.",
            module=module,
        ),
        _(
            "Or pick the prebuilt wheel that matches exactly: `python -c 'import torch; "
            "print(torch.__version__, torch.version.cuda, "
            "torch._C._GLIBCXX_USE_CXX11_ABI)'` gives the torch version, CUDA version "
            "and cxx11abi flag its name must carry."
        ),
    )
    return _Told(title, explanation, fixes)


def _library_missing(fields: Mapping[str, str]) -> _Told:
    """A shared library a binary needs is not there."""
    library = fields["library"]
    title = _("Shared library {library} is missing", library=library)
    explanation = _(
        "A binary needs {library}, which is not installed or not on the "
        "loader's path: usually a package built for another CUDA version "
        "than the one in this environment.",
        library=library,
    )
    fixes = (
        _(
            "Install the build of the package that matches this environment's CUDA "
            "(see `python -c 'import torch; print(torch.version.cuda)'`), or the library "
            "itself (e.g. the nvidia-cuda-runtime-cuXX pip package)."
        ),
        _(
            "Check LD_LIBRARY_PATH and `ldconfig -p | grep {name}`.",
            name=library.split(".so")[0],
        ),
    )
    return _Told(title, explanation, fixes)


class LibraryMismatch(LogKindsRule):
    """user-space libraries do not match

    Fires when: `GLIBC_2.xx` / `GLIBCXX_3.4.xx not found`, `undefined symbol` in an extension, a
    missing `.so`; names the extension

    Why: A compiled extension needs the user-space libraries it was built against: a glibc or
    libstdc++ at least as new, the same torch C++ ABI, the CUDA runtime libraries it links. When
    they differ it fails to import (`GLIBC_2.xx not found`, `undefined symbol`, a missing `.so`) and
    the job dies before training starts.

    Instead: Install extensions built for this environment: a wheel for the installed torch and CUDA
    version, or a build from source against it (`pip install --no-build-isolation --force-reinstall
    --no-binary PKG PKG`); use a newer libstdc++ (`conda install -c conda-forge libstdcxx-ng`), or a
    container built on the same base as the wheels.
    """

    id = "HD551"
    category = Category.ENV_LIBRARY_MISMATCH
    specificity = 85
    kinds = (
        LogKind.SYMBOL_VERSION_MISSING,
        LogKind.UNDEFINED_SYMBOL,
        LogKind.SHARED_OBJECT_MISSING,
    )

    def explain(self, job: JobView, found: list[LogMatch]) -> Iterable[Finding]:
        first = found[0]
        told = (
            _symbol_version_missing(first.fields)
            if first.kind == LogKind.SYMBOL_VERSION_MISSING
            else _undefined_symbol(first.fields)
            if first.kind == LogKind.UNDEFINED_SYMBOL
            else _library_missing(first.fields)
        )
        yield self.finding(
            confidence=Confidence.PROVEN,
            title=told.title,
            explanation=told.explanation,
            evidence=tuple(cite(found)),
            fixes=told.fixes,
        )
