"""Log rules for a broken environment rather than a broken job: PyTorch, CUDA and driver versions
that do not fit the GPU or each other, native libraries that do not match (glibc, libstdc++,
torch symbols, a missing CUDA library), and operating-system limits (open files). The fix is in
the installation, not in the training code.

HD550 env.version_incompatible, HD551 env.library_mismatch, HD552 env.os_limits.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from hangdoctor.analysis.job import JobView
from hangdoctor.rules.base import Example, Rule
from hangdoctor.rules.finding import Finding, Severity
from hangdoctor.rules.logs.common import _cite, _clip, _found, _logs


# --- HD550 env.version_incompatible ----------------------------------------------------------
def _cuda_version(encoded: str) -> str:
    """CUDA's integer version (11040) as 11.4."""
    value = int(encoded)
    return f"{value // 1000}.{(value % 1000) // 10}"


class VersionIncompatible(Rule):
    """The framework, CUDA and driver versions do not fit this GPU or each other."""

    id = "HD550"
    category = "env.version_incompatible"
    summary = "mismatched PyTorch / CUDA / driver versions"
    specificity = 85
    names_culprit = False
    fires_on = (
        Example("no kernel image for this GPU", lambda: _logs([
            "UserWarning: NVIDIA H100 80GB HBM3 with CUDA capability sm_90 is not compatible "
            "with the current PyTorch installation.",
            "The current PyTorch install supports CUDA capabilities sm_37 sm_50 sm_60 sm_70.",
            "RuntimeError: CUDA error: no kernel image is available for execution on the "
            "device"])),
        Example("driver too old", lambda: _logs([
            "RuntimeError: The NVIDIA driver on your system is too old (found version 11040). "
            "Please update your GPU driver by downloading and installing a new version from "
            "the URL: http://www.nvidia.com/Download/index.aspx"])),
        Example("driver insufficient for the runtime", lambda: _logs([
            "RuntimeError: CUDA error: CUDA driver version is insufficient for CUDA runtime "
            "version"])),
    )
    quiet_on = (
        Example("a CUDA out-of-memory error", lambda: _logs([
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB."])),
    )

    def check(self, job: JobView) -> Iterable[Finding]:
        found = _found(job, "no_kernel_image", "arch_unsupported", "arch_supported",
                       "driver_insufficient", "driver_too_old")
        if not found:
            return
        kinds = {m.kind for m in found}
        arch = next((m for m in found if m.kind == "arch_unsupported"), None)
        supported = next((m for m in found if m.kind == "arch_supported"), None)
        old = next((m for m in found if m.kind == "driver_too_old"), None)
        if kinds & {"no_kernel_image", "arch_unsupported"}:
            gpu = f" ({arch.fields['gpu']}, {arch.fields['arch']})" if arch else ""
            title = f"This PyTorch build has no code for this GPU{gpu}"
            explanation = ("The CUDA kernels in the installed build (or in an extension) were "
                           "not compiled for this GPU's architecture"
                           + (f"; the build supports {supported.fields['archs'].strip()}"
                              if supported else "") + ".")
            fixes = (
                "Compare `python -c 'import torch; print(torch.__version__, "
                "torch.cuda.get_arch_list(), torch.cuda.get_device_capability())'`, then install "
                "a build that includes your GPU, e.g. `pip install torch --index-url "
                "https://download.pytorch.org/whl/cu128` (newer GPUs need newer CUDA builds; "
                "old GPUs may need an older torch).",
                "For your own CUDA extensions, rebuild them with TORCH_CUDA_ARCH_LIST set to "
                "your GPU's capability (e.g. TORCH_CUDA_ARCH_LIST=9.0).",
            )
        else:
            supports = (f" (it supports CUDA up to {_cuda_version(old.fields['found'])})"
                        if old else "")
            title = f"The NVIDIA driver is too old for this PyTorch's CUDA{supports}"
            explanation = ("The CUDA runtime bundled with PyTorch needs a newer driver than the "
                           "one installed" + supports + ".")
            fixes = (
                "Upgrade the NVIDIA driver (`nvidia-smi` shows the highest CUDA version it "
                "supports), or install a PyTorch build for a CUDA that driver supports, e.g. "
                "`pip install torch --index-url https://download.pytorch.org/whl/cu118`.",
                "In a container the driver is the host's: the host driver must be new enough "
                "for the image's CUDA (or use the CUDA forward-compatibility package on "
                "data-centre GPUs).",
            )
        yield Finding(
            id=self.id, category=self.category, severity=Severity.ERROR, confidence=0.95,
            title=title, explanation=explanation, evidence=tuple(_cite(found)), fixes=fixes,
        )


# --- HD551 env.library_mismatch --------------------------------------------------------------
def _module(path: str) -> str:
    """`flash_attn_2_cuda` from `.../flash_attn_2_cuda.cpython-310-x86_64-linux-gnu.so`."""
    return re.sub(r"(\.cpython-[^/]*|\.abi3)?\.so[\w.]*$", "", path.rsplit("/", 1)[-1])


def _symbol_owner(symbol: str) -> str | None:
    if re.match(r"_ZN?K?\d*(?:3c10|2at|5torch|4c10d)", symbol.replace("_ZNK", "_ZN")):
        return "PyTorch (it was compiled against a different torch version)"
    for prefix, owner in (("nccl", "NCCL"), ("cudnn", "cuDNN"), ("cublas", "cuBLAS"),
                          ("cuda", "the CUDA runtime"), ("Py", "the Python interpreter")):
        if symbol.startswith(prefix):
            return owner
    return None


class LibraryMismatch(Rule):
    """User-space libraries disagree: an extension built on a newer system (glibc, libstdc++),
    against another torch (undefined C++ symbols), or for a CUDA runtime that is not here."""

    id = "HD551"
    category = "env.library_mismatch"
    summary = "user-space libraries do not match"
    specificity = 85
    names_culprit = False
    fires_on = (
        Example("extension needs a newer glibc", lambda: _logs([
            "ImportError: /lib64/libc.so.6: version `GLIBC_2.32' not found (required by "
            "/opt/venv/lib/python3.10/site-packages/flash_attn_2_cuda.cpython-310-x86_64-"
            "linux-gnu.so)"])),
        Example("extension built for another torch", lambda: _logs([
            "    import flash_attn_2_cuda as flash_attn_gpu",
            "ImportError: /opt/venv/lib/python3.10/site-packages/flash_attn_2_cuda.cpython-310-"
            "x86_64-linux-gnu.so: undefined symbol: _ZN3c105ErrorC2ENS_14SourceLocationENSt7__"
            "cxx1112basic_stringIcSt11char_traitsIcESaIcEEE"])),
        Example("missing CUDA runtime library", lambda: _logs([
            "OSError: libcudart.so.11.0: cannot open shared object file: No such file or "
            "directory"])),
    )
    quiet_on = (
        Example("an ordinary ImportError", lambda: _logs([
            "ModuleNotFoundError: No module named 'wandb'"])),
    )

    def check(self, job: JobView) -> Iterable[Finding]:
        found = _found(job, "symbol_version_missing", "undefined_symbol", "shared_object_missing")
        if not found:
            return
        first = found[0]
        fields = first.fields
        if first.kind == "symbol_version_missing":
            version, library = fields["version"], fields["library"]
            needed_by = fields.get("required_by")
            who = f"`{_module(needed_by)}`" if needed_by else "a binary"
            title = f"{who} needs {version}, which {library} does not provide"
            if version.startswith("GLIBCXX") or version.startswith("CXXABI"):
                explanation = (f"{who} was built with a newer C++ compiler than the libstdc++ "
                               f"loaded here ({library}).")
                fixes = (
                    "Load a newer libstdc++: in conda, `conda install -c conda-forge "
                    "libstdcxx-ng` and make sure the env's lib comes first "
                    "(LD_LIBRARY_PATH=$CONDA_PREFIX/lib); or use a newer base image.",
                    f"Or install a build of {who} made for this system.",
                )
            else:
                explanation = (f"{who} was built on a newer Linux (glibc with {version}) than "
                               f"this machine or container has (`ldd --version`).")
                fixes = (
                    f"Install a wheel of {who} built for this glibc (a manylinux tag not newer "
                    "than `ldd --version`), or build it here from source "
                    "(`pip install --no-binary :all: <package>`).",
                    "Or run in a container with a newer base image (e.g. Ubuntu 22.04 has "
                    "glibc 2.35).",
                )
        elif first.kind == "undefined_symbol":
            module = _module(fields["library"])
            owner = _symbol_owner(fields["symbol"])
            title = f"`{module}` does not match the installed libraries (undefined symbol)"
            explanation = (f"The extension `{module}` expects a symbol that the loaded "
                           f"libraries do not have ({_clip(fields['symbol'])[:120]})"
                           + (f": it belongs to {owner}." if owner else "."))
            fixes = (
                f"Rebuild `{module}` against the installed torch: `pip uninstall -y <package> && "
                "pip install <package> --no-build-isolation --no-cache-dir`.",
                "Or pick the prebuilt wheel that matches exactly: `python -c 'import torch; "
                "print(torch.__version__, torch.version.cuda, "
                "torch._C._GLIBCXX_USE_CXX11_ABI)'` gives the torch version, CUDA version and "
                "cxx11abi flag its name must carry.",
            )
        else:
            library = fields["library"]
            title = f"Shared library {library} is missing"
            explanation = (f"A binary needs {library}, which is not installed or not on the "
                           "loader's path: usually a package built for another CUDA version "
                           "than the one in this environment.")
            fixes = (
                "Install the build of the package that matches this environment's CUDA (see "
                "`python -c 'import torch; print(torch.version.cuda)'`), or the library "
                "itself (e.g. the nvidia-cuda-runtime-cuXX pip package).",
                f"Check LD_LIBRARY_PATH and `ldconfig -p | grep {library.split('.so')[0]}`.",
            )
        yield Finding(
            id=self.id, category=self.category, severity=Severity.ERROR, confidence=0.95,
            title=title, explanation=explanation, evidence=tuple(_cite(found)), fixes=fixes,
        )


# --- HD552 env.os_limits ---------------------------------------------------------------------
class OpenFilesLimit(Rule):
    """The job ran out of file descriptors (`ulimit -n`), often because DataLoader workers pass
    every tensor as a descriptor."""

    id = "HD552"
    category = "env.os_limits"
    summary = "out of file descriptors"
    specificity = 70
    names_culprit = False
    fires_on = (
        Example("EMFILE", lambda: _logs([
            "OSError: [Errno 24] Too many open files: '/data/shards/train-00042.tar'"])),
        Example("descriptors lost between DataLoader workers", lambda: _logs([
            "  File \"/usr/lib/python3.10/multiprocessing/reduction.py\", line 164, in recvfds",
            "RuntimeError: received 0 items of ancdata"])),
    )
    quiet_on = (
        Example("nothing about descriptors", lambda: _logs(["epoch 2 done"])),
    )

    def check(self, job: JobView) -> Iterable[Finding]:
        found = _found(job, "too_many_open_files")
        if not found:
            return
        yield Finding(
            id=self.id, category=self.category, severity=Severity.ERROR, confidence=0.9,
            title="The job ran out of file descriptors (ulimit -n)",
            explanation=("The process hit its limit on open files. DataLoader workers send "
                         "each tensor to the main process as a file descriptor, so many workers "
                         "or large batches exhaust a low limit (often 1024)."),
            evidence=tuple(_cite(found)),
            fixes=(
                "Raise the limit before launching: `ulimit -n 65536` (Docker: `--ulimit "
                "nofile=65536:65536`; systemd: LimitNOFILE=; Slurm: check "
                "PropagateResourceLimits).",
                "Or call `torch.multiprocessing.set_sharing_strategy('file_system')` at start, "
                "which needs far fewer descriptors.",
                "Look for files or sockets opened per step or per sample and never closed.",
            ),
        )
