"""Versions: CUDA runtime against the driver, nvcc against torch's CUDA, known-bad
combinations from compat.json, and build locks that make custom-op compilation wait forever."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import get_args

from packaging.specifiers import InvalidSpecifier, SpecifierSet

from hangdoctor.doctor import compat
from hangdoctor.doctor.check import Check, Example
from hangdoctor.doctor.examples import node
from hangdoctor.doctor.facts import Facts
from hangdoctor.doctor.result import CheckResult, Status
from hangdoctor.i18n import N_, _

_STATUSES: tuple[Status, ...] = get_args(Status)

#: The prose of compat.json's known-bad entries, by id, so that it can be translated (the file
#: stays as it is: English, with its sources). A test keeps the two the same.
KNOWN_BAD_PROSE: dict[str, dict[str, str]] = {
    "cuda-10.2.89-extensions": {
        "title": N_(
            "CUDA extensions fail to compile with nvcc 10.2.89 against torch built with CUDA 10.2"
        ),
        "why": N_(
            "nvcc 10.2.89 rejects c10/util/variant.h, so custom CUDA ops (built on first import "
            "by many projects) fail to build; a build retried by several ranks at once can leave "
            "a stale lock that makes the next start wait forever."
        ),
        "fix": N_(
            "Install CUDA 10.1 (10.1.168) for building extensions, or a torch built with a newer "
            "CUDA together with the matching nvcc."
        ),
    },
}


def known_bad_text(entry: dict[str, object], field: str) -> str:
    """A known-bad entry's `field` in the report's language: translated when the table above
    has that entry's text, as compat.json gives it otherwise."""
    text = str(entry[field])
    if KNOWN_BAD_PROSE.get(str(entry.get("id")), {}).get(field) == text:
        return _(text)
    return text


class VersionSummary(Check):
    """Python, torch and its CUDA/HIP/cuDNN/NCCL, TensorFlow, JAX, Keras, NVIDIA driver, nvcc, gcc

    Why: A job that works on one node and hangs on another most often differs in its versions:
    Python, torch and its CUDA, cuDNN and NCCL, the driver, the compilers that build custom ops. The
    version matrix is the first thing to compare, and it is what a bug report needs.

    Instead: Compare this list with a node where the job works, pin the versions that differ (a lock
    file, one container image for every node), and paste the list into bug reports.
    """

    id = "DR101"
    area = "versions"
    quiet_on = (
        Example("a CPU node", lambda: node(), "info"),
        Example(
            "a GPU node",
            lambda: node(
                versions={
                    "torch_cuda": "12.4",
                    "cudnn": "9.1.0",
                    "nccl": "2.21.5",
                    "driver": "550.54.15",
                    "nvcc": "12.4",
                    "gcc": "12.2.0",
                }
            ),
            "info",
        ),
    )
    informs_only = True

    def check(self, facts: Facts) -> Iterator[CheckResult]:
        v = facts.versions
        parts = [_("Python {version}", version=v.python)]
        if v.torch:
            built = ", ".join(
                x
                for x in (
                    f"CUDA {v.torch_cuda}" if v.torch_cuda else "",
                    f"ROCm/HIP {v.torch_hip}" if v.torch_hip else "",
                    f"cuDNN {v.cudnn}" if v.cudnn else "",
                    f"NCCL {v.nccl}" if v.nccl else "",
                )
                if x
            ) or _("CPU only")
            parts.append(_("torch {version} ({built})", version=v.torch, built=built))
        else:
            parts.append(_("torch not installed"))
        parts += [
            f"{name} {value}"
            for name, value in (
                ("TensorFlow", v.tensorflow),
                ("JAX", v.jax),
                ("jaxlib", v.jaxlib),
                ("Keras", v.keras),
                (_("NVIDIA driver"), v.driver),
                ("nvcc", v.nvcc),
                ("gcc", v.gcc),
            )
            if value
        ]
        if not v.driver:
            parts.append(_("no NVIDIA driver"))
        yield self.result(
            "info",
            _("Versions"),
            found="; ".join(parts),
            why=_(
                "The version matrix is the first thing to compare when a job "
                "that works elsewhere hangs here."
            ),
        )


def _cuda_node(cuda: str, driver: str) -> Facts:
    return node(versions={"torch": "2.4.0", "torch_cuda": cuda, "driver": driver})


class RuntimeAgainstDriver(Check):
    """torch's CUDA runtime against the driver: below the toolkit's minimum driver (NVIDIA's table) is
    `warn` while CUDA minor-version compatibility still applies, `problem` below that

    Why: Each CUDA runtime needs a minimum NVIDIA driver. Below it, CUDA initialisation fails (`CUDA
    driver version is insufficient`) on some ranks while the others wait for them in their first
    collective; just above the floor of minor-version compatibility most kernels run, but PTX built
    for the newer toolkit cannot be JIT-compiled and custom ops fail or stall.

    Instead: Install a driver at least as new as the runtime's minimum (NVIDIA's table), or a torch
    build for an older CUDA that the driver supports (`pip install torch --index-url
    https://download.pytorch.org/whl/cuXYZ`).
    """

    id = "DR102"
    area = "versions"
    fires_on = (
        Example(
            "12.4 on driver 535: minor-version compatibility only",
            lambda: _cuda_node("12.4", "535.161.08"),
            "warn",
        ),
        Example(
            "12.4 on driver 470: below the 12.x floor",
            lambda: _cuda_node("12.4", "470.82.01"),
            "problem",
        ),
    )
    quiet_on = (
        Example("12.4 on driver 550.54.15", lambda: _cuda_node("12.4", "550.54.15"), "ok"),
        Example("a CUDA release not in the table", lambda: _cuda_node("9.9", "550.54.15"), "info"),
        Example("no NVIDIA driver", lambda: node(versions={"torch_cuda": "12.4"}), None),
    )

    def check(self, facts: Facts) -> Iterator[CheckResult]:
        v = facts.versions
        runtime = compat.major_minor(v.torch_cuda)
        driver = compat.version(v.driver)
        if runtime is None or driver is None:
            return
        data = compat.load()
        table = data["cuda_minimum_driver"]
        source = str(table["source"])
        minimum_text = table["table"].get(runtime)
        title = _(
            "CUDA runtime {runtime} (torch) against driver {driver}",
            runtime=runtime,
            driver=v.driver,
        )
        minimum = compat.version(minimum_text)
        if minimum is None:
            yield self.result(
                "info",
                title,
                found=f"CUDA {runtime}",
                wanted=_("a CUDA release listed in hangdoctor's compat.json"),
                why=_("This CUDA release is not in hangdoctor's table; compare by hand."),
                source=source,
            )
            return
        if driver >= minimum:
            yield self.result(
                "ok",
                title,
                found=_("driver {driver}", driver=v.driver),
                wanted=f">= {minimum_text}",
                source=source,
            )
            return
        floor_text = data["minor_version_floor"]["table"].get(runtime.split(".")[0])
        floor = compat.version(floor_text)
        if v.driver_cuda:
            fix = _(
                "Install NVIDIA driver {minimum} or newer, or a torch build for an older "
                "CUDA (e.g. `pip install torch --index-url https://download.pytorch.org/whl/cuXYZ` "
                "with a CUDA the driver supports, up to {driver_cuda}).",
                minimum=minimum_text,
                driver_cuda=v.driver_cuda,
            )
        else:
            fix = _(
                "Install NVIDIA driver {minimum} or newer, or a torch build for an older "
                "CUDA (e.g. `pip install torch --index-url https://download.pytorch.org/whl/cuXYZ` "
                "with a CUDA the driver supports).",
                minimum=minimum_text,
            )
        wanted = _(">= {minimum} (CUDA {runtime} minimum)", minimum=minimum_text, runtime=runtime)
        if floor is not None and driver >= floor:
            yield self.result(
                "warn",
                title,
                found=_("driver {driver}", driver=v.driver),
                wanted=wanted,
                why=_(
                    "Below CUDA {runtime}'s minimum driver the job relies on CUDA minor "
                    "version compatibility (driver >= {floor}): most kernels run, but "
                    "PTX built for the newer toolkit cannot be JIT-compiled and newer driver "
                    "features are missing, which surfaces as errors or stalls in custom ops "
                    "and compiled kernels.",
                    runtime=runtime,
                    floor=floor_text,
                ),
                fix=fix,
                source=source,
            )
            return
        yield self.result(
            "problem",
            title,
            found=_("driver {driver}", driver=v.driver),
            wanted=wanted,
            why=_(
                "The driver is too old for this CUDA runtime: CUDA initialisation fails "
                "(`CUDA driver version is insufficient`) on some ranks, and the ranks that "
                "did start wait for them in their first collective until the timeout."
            ),
            fix=fix,
            source=source,
        )


def _nvcc_node(cuda: str, nvcc: str) -> Facts:
    return node(versions={"torch": "2.4.0", "torch_cuda": cuda, "nvcc": nvcc})


class NvccAgainstTorch(Check):
    """nvcc's CUDA against torch's: a major mismatch stops CUDA extensions from building

    Why: `torch.utils.cpp_extension` refuses to build CUDA extensions with an nvcc of another CUDA
    major version than torch's. Projects that build custom ops on first import then fail, or every
    rank retries the build and waits on the others' build lock.

    Instead: Put a toolkit of torch's CUDA major version first on PATH (`export
    CUDA_HOME=/usr/local/cuda-12.1 PATH=$CUDA_HOME/bin:$PATH`), or install the torch build for
    nvcc's CUDA.
    """

    id = "DR103"
    area = "versions"
    fires_on = (
        Example(
            "nvcc 13.0 against torch built for CUDA 12.1",
            lambda: _nvcc_node("12.1", "13.0"),
            "problem",
        ),
    )
    quiet_on = (
        Example("the same release", lambda: _nvcc_node("12.1", "12.1"), "ok"),
        Example("a minor mismatch builds", lambda: _nvcc_node("12.1", "12.4"), "info"),
        Example("no nvcc on PATH", lambda: node(versions={"torch_cuda": "12.1"}), None),
    )

    def check(self, facts: Facts) -> Iterator[CheckResult]:
        v = facts.versions
        torch_cuda, nvcc = compat.version(v.torch_cuda), compat.version(v.nvcc)
        if torch_cuda is None or nvcc is None:
            return
        source = str(compat.load()["extension_build"]["source"])
        title = _("nvcc {nvcc} against torch's CUDA {cuda}", nvcc=v.nvcc, cuda=v.torch_cuda)
        if torch_cuda.major != nvcc.major:
            yield self.result(
                "problem",
                title,
                found=f"nvcc {v.nvcc}",
                wanted=f"nvcc {torch_cuda.major}.x",
                why=_(
                    "torch.utils.cpp_extension refuses to build CUDA extensions across CUDA "
                    "major versions; projects that build custom ops on first import fail, or "
                    "every rank retries the build and waits on the others' build lock."
                ),
                fix=_(
                    "Put a CUDA {torch_major}.x toolkit first on PATH "
                    "(`export CUDA_HOME=/usr/local/cuda-{torch_cuda} "
                    "PATH=$CUDA_HOME/bin:$PATH`), or install the torch build for "
                    "CUDA {nvcc_major}.x.",
                    torch_major=torch_cuda.major,
                    torch_cuda=v.torch_cuda,
                    nvcc_major=nvcc.major,
                ),
                source=source,
            )
        elif torch_cuda.minor != nvcc.minor:
            yield self.result(
                "info",
                title,
                found=f"nvcc {v.nvcc}",
                wanted=f"nvcc {v.torch_cuda}",
                why=_(
                    "A minor CUDA mismatch builds (torch warns), but extensions are then "
                    "tested against a toolkit torch was not built with."
                ),
                source=source,
            )
        else:
            yield self.result("ok", title, found=f"nvcc {v.nvcc}", source=source)


def _matches(when: dict[str, str], values: dict[str, object]) -> bool:
    """Whether every field a known-bad entry names (`when`) has a version in its specifier."""
    for field, spec in when.items():
        value = compat.version(str(values[field]) if values.get(field) else None)
        try:
            specifier = SpecifierSet(spec)
        except InvalidSpecifier:
            return False
        if value is None or not specifier.contains(value, prereleases=True):
            return False
    return True


class KnownBadCombination(Check):
    """known-bad combinations listed in `compat.json`

    Why: Some combinations of versions are known to hang or crash (a NCCL release with a deadlock, a
    driver that breaks a CUDA feature, a torch and Python pair): the job fails on them however
    correct its code is, often only at scale or after hours.

    Instead: Leave the combination: do what the entry's fix says (upgrade, downgrade or pin the
    package it names, or apply its workaround until you can); each entry cites its source.
    """

    id = "DR104"
    area = "versions"
    fires_on = (
        Example(
            "torch built for CUDA 10.2 with nvcc 10.2 (pytorch#33203)",
            lambda: node(versions={"torch": "1.5.0", "torch_cuda": "10.2", "nvcc": "10.2"}),
            "warn",
        ),
    )
    quiet_on = (
        Example(
            "CUDA 10.1 with nvcc 10.1",
            lambda: node(versions={"torch": "1.5.0", "torch_cuda": "10.1", "nvcc": "10.1"}),
            None,
        ),
        Example("a CPU node", lambda: node(), None),
    )

    def check(self, facts: Facts) -> Iterator[CheckResult]:
        values = facts.versions.model_dump()
        for entry in compat.load()["known_bad"]:
            if not _matches(entry["when"], values):
                continue
            status = entry["status"]
            if status not in _STATUSES:
                raise ValueError(f"compat.json: known_bad {entry['id']}: status {status!r}")
            found = ", ".join(f"{field} {values.get(field)}" for field in entry["when"])
            yield self.result(
                status,
                known_bad_text(entry, "title"),
                found=found,
                wanted=_("not this combination"),
                why=known_bad_text(entry, "why"),
                fix=known_bad_text(entry, "fix"),
                source=str(entry["source"]),
            )


class StaleExtensionLock(Check):
    """`lock` files left in the torch extensions build directory (`load()` waits on them forever)

    Why: `torch.utils.cpp_extension.load` takes a `lock` file in the extensions build directory and
    waits, with no time limit and no message, until it disappears. A build that was killed leaves
    the lock behind, and every later start of the job hangs while loading its custom op.

    Instead: Remove the stale lock (`rm ~/.cache/torch_extensions/*/*/lock`, or the directory
    `TORCH_EXTENSIONS_DIR` names) when no build is running, and build extensions ahead of time (`pip
    install .` / `setup.py`) rather than on first import in every rank.
    """

    id = "DR105"
    area = "versions"
    fires_on = (
        Example(
            "a lock left by a killed build",
            lambda: node(
                versions={
                    "torch_extension_locks": (
                        "/root/.cache/torch_extensions/py311_cu121/fused/lock",
                    )
                }
            ),
            "warn",
        ),
    )
    quiet_on = (Example("no lock", lambda: node(), None),)

    def check(self, facts: Facts) -> Iterator[CheckResult]:
        locks = facts.versions.torch_extension_locks[:5]
        if not locks:
            return
        yield self.result(
            "warn",
            _("Lock files in the torch extensions build directory"),
            found=", ".join(locks),
            wanted=_("none while nothing builds"),
            why=_(
                "torch.utils.cpp_extension.load waits, with no time limit and no message, "
                "until this lock disappears; a build that was killed leaves it behind, and "
                "the next start of the job then hangs while loading its custom op."
            ),
            fix=_("If no build is running: `rm {locks}`", locks=" ".join(locks)),
            source=str(compat.load()["stale_extension_lock"]["source"]),
        )


JAX_INSTALL_SOURCE = "https://docs.jax.dev/en/latest/installation.html"
TF_THREADS_SOURCE = "https://www.tensorflow.org/api_docs/python/tf/config/threading"
TF_LOGGING_SOURCE = "https://www.tensorflow.org/api_docs/python/tf/get_logger"
#: The JAX and TensorFlow settings worth showing first (the rest of XLA_*, JAX_*, TF_*,
#: KERAS_* follow).
_SHOWN_FIRST = (
    "XLA_FLAGS",
    "JAX_PLATFORMS",
    "XLA_PYTHON_CLIENT_PREALLOCATE",
    "XLA_PYTHON_CLIENT_MEM_FRACTION",
    "TF_NUM_INTEROP_THREADS",
    "TF_NUM_INTRAOP_THREADS",
    "TF_CPP_MIN_LOG_LEVEL",
    "TF_FORCE_GPU_ALLOW_GROWTH",
    "KERAS_BACKEND",
)


def _framework_installed(facts: Facts) -> bool:
    v = facts.versions
    return bool(v.jax or v.jaxlib or v.tensorflow or v.keras)


def _jax(jax: str = "0.10.2", jaxlib: str = "0.10.2", **environment: str) -> Facts:
    return node(versions={"jax": jax, "jaxlib": jaxlib}, frameworks={"environment": environment})


def _tf(**environment: str) -> Facts:
    return node(
        versions={"tensorflow": "2.21.0", "keras": "3.15.1"},
        frameworks={"environment": environment},
    )


class FrameworkSettings(Check):
    """JAX, jaxlib, TensorFlow and Keras, and the XLA_*, JAX_*, TF_*, KERAS_* settings

    Why: JAX and TensorFlow change behaviour through environment variables: XLA_FLAGS (the
    compiler's and runtime's options, dumps that slow every compile), JAX_PLATFORMS, TensorFlow's
    thread pools and log level, Keras's backend. One left over from a debugging session makes a node
    behave unlike the others.

    Instead: Compare the list with a node where the job works; set what the job needs in its launch
    script, not in a profile every job inherits.
    """

    id = "DR106"
    area = "versions"
    informs_only = True
    quiet_on = (
        Example("neither installed", lambda: node(), None),
        Example("JAX with flags", lambda: _jax(XLA_FLAGS="--xla_dump_to=/tmp/x"), "info"),
        Example("TensorFlow, nothing set", lambda: _tf(), "info"),
    )

    def check(self, facts: Facts) -> Iterator[CheckResult]:
        env = facts.frameworks.environment
        if not _framework_installed(facts) and not env:
            return
        v = facts.versions
        versions = "; ".join(
            f"{name} {value}"
            for name, value in (
                ("JAX", v.jax),
                ("jaxlib", v.jaxlib),
                ("TensorFlow", v.tensorflow),
                ("Keras", v.keras),
            )
            if value
        )
        names = [n for n in _SHOWN_FIRST if n in env] + sorted(
            n for n in env if n not in _SHOWN_FIRST
        )
        settings = ", ".join(f"{n}={env[n]}" for n in names) or _("none set")
        yield self.result(
            "info",
            _("JAX and TensorFlow settings"),
            found=_(
                "{versions}; settings: {settings}",
                versions=versions or _("none of them installed in this Python"),
                settings=settings,
            ),
            why=_("What JAX, XLA, TensorFlow and Keras will read here (secrets redacted)."),
        )


def _release(version: str) -> tuple[int, ...]:
    """`0.10.2` -> (0, 10, 2); `0.4.30.dev20240601` -> (0, 4, 30)."""
    return tuple(int(part) for part in re.findall(r"\d+", version)[:3])


class JaxlibMatchesJax(Check):
    """jax and jaxlib of the same release (`warn` when they differ)

    Why: jax and jaxlib are released together, and jax checks only for a minimum jaxlib: a jaxlib
    left from another install can import, then fail or behave unlike its jax in compilation and the
    distributed runtime, which is hard to tell from a bug in the job.

    Instead: Install both at one version: `pip install -U 'jax[cpu]==X' ` (or `jax[cuda12]`).
    """

    id = "DR107"
    area = "versions"
    fires_on = (
        Example("jaxlib older", lambda: _jax(jax="0.10.2", jaxlib="0.9.0"), "warn"),
        Example("jaxlib newer", lambda: _jax(jax="0.4.30", jaxlib="0.4.31"), "warn"),
    )
    quiet_on = (
        Example("same release", lambda: _jax(), "ok"),
        Example("a dev build of the same release", lambda: _jax(jaxlib="0.10.2.dev1"), "ok"),
        Example("no JAX", lambda: node(), None),
    )

    def check(self, facts: Facts) -> Iterator[CheckResult]:
        jax, jaxlib = facts.versions.jax, facts.versions.jaxlib
        if not jax or not jaxlib:
            return
        found = f"jax {jax}, jaxlib {jaxlib}"
        if _release(jax) != _release(jaxlib):
            yield self.result(
                "warn",
                _("jax and jaxlib are of different releases"),
                found=found,
                wanted=_("the same release"),
                why=_(
                    "jax only checks for a minimum jaxlib; a mismatched pair can fail or "
                    "behave unlike either release."
                ),
                fix=f"pip install 'jax[cpu]=={jax}'  # or jax[cuda12]",
                source=JAX_INSTALL_SOURCE,
            )
        else:
            yield self.result("ok", _("jax and jaxlib match"), found=found)


class TensorflowLogLevel(Check):
    """TF_CPP_MIN_LOG_LEVEL=3 hides TensorFlow's and XLA's errors (`warn`)

    Why: TF_CPP_MIN_LOG_LEVEL filters what TensorFlow's and XLA's C++ code logs. At 3 even errors
    are dropped: an op that fails in a tf.data pipeline or a collective that times out leaves no
    line, and a job that stalls after an error looks like a silent hang.

    Instead: Use 2 at most (it hides info and warnings), or unset it while you debug a hang.
    """

    id = "DR108"
    area = "versions"
    fires_on = (Example("errors hidden", lambda: _tf(TF_CPP_MIN_LOG_LEVEL="3"), "warn"),)
    quiet_on = (
        Example("warnings hidden", lambda: _tf(TF_CPP_MIN_LOG_LEVEL="2"), "ok"),
        Example("unset", lambda: _tf(), "ok"),
        Example("no TensorFlow", lambda: node(), None),
    )

    def check(self, facts: Facts) -> Iterator[CheckResult]:
        level = facts.frameworks.environment.get("TF_CPP_MIN_LOG_LEVEL")
        if not facts.versions.tensorflow and level is None:
            return
        if level is not None and level.strip().isdigit() and int(level) >= 3:
            yield self.result(
                "warn",
                _("TensorFlow's error log is turned off"),
                found=f"TF_CPP_MIN_LOG_LEVEL={level}",
                wanted=_("2 or lower"),
                why=_(
                    "At 3 TensorFlow and XLA drop even their errors: a failure before a stall "
                    "leaves no line in the log."
                ),
                fix="export TF_CPP_MIN_LOG_LEVEL=2",
                source=TF_LOGGING_SOURCE,
            )
        else:
            shown = f"TF_CPP_MIN_LOG_LEVEL={level}" if level is not None else _("unset")
            yield self.result("ok", _("TensorFlow logs its errors"), found=shown)


class TensorflowInterOpThreads(Check):
    """TF_NUM_INTEROP_THREADS=1: one inter-op thread (`warn`)

    Why: TensorFlow runs independent ops on its inter-op thread pool. With one thread, an op that
    blocks until another op runs (a queue, a py_function waiting on the graph, a collective) holds
    the only thread the other op could run on, and both wait forever.

    Instead: Leave TF_NUM_INTEROP_THREADS unset (TensorFlow picks) or give it at least 2; to limit
    CPU use, lower TF_NUM_INTRAOP_THREADS instead.
    """

    id = "DR109"
    area = "versions"
    fires_on = (Example("one thread", lambda: _tf(TF_NUM_INTEROP_THREADS="1"), "warn"),)
    quiet_on = (
        Example("several threads", lambda: _tf(TF_NUM_INTEROP_THREADS="4"), "ok"),
        Example("unset", lambda: _tf(), None),
        Example("no TensorFlow", lambda: node(), None),
    )

    def check(self, facts: Facts) -> Iterator[CheckResult]:
        env = facts.frameworks.environment
        threads = env.get("TF_NUM_INTEROP_THREADS")
        if threads is None:
            return
        found = f"TF_NUM_INTEROP_THREADS={threads}"
        if threads.strip() == "1":
            yield self.result(
                "warn",
                _("TensorFlow has a single inter-op thread"),
                found=found,
                wanted=_("unset, or 2 or more"),
                why=_(
                    "An op that blocks until another op runs holds the only thread that op "
                    "could run on."
                ),
                fix="unset TF_NUM_INTEROP_THREADS",
                source=TF_THREADS_SOURCE,
            )
        else:
            yield self.result("ok", _("TensorFlow's inter-op threads"), found=found)
