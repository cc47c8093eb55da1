"""Versions: CUDA runtime against the driver, nvcc against torch's CUDA, known-bad
combinations from compat.json, and build locks that make custom-op compilation wait forever."""

from __future__ import annotations

from packaging.specifiers import InvalidSpecifier, SpecifierSet

from hangdoctor.doctor import compat
from hangdoctor.doctor.facts import Facts, Versions
from hangdoctor.doctor.result import CheckResult


def _r(id: str, status: str, title: str, **fields: str | None) -> CheckResult:
    return CheckResult(id=id, area="versions", status=status, title=title,  # type: ignore[arg-type]
                       **{k: v for k, v in fields.items() if v is not None})


def _summary(v: Versions) -> CheckResult:
    parts = [f"Python {v.python}"]
    if v.torch:
        built = ", ".join(x for x in (
            f"CUDA {v.torch_cuda}" if v.torch_cuda else "",
            f"ROCm/HIP {v.torch_hip}" if v.torch_hip else "",
            f"cuDNN {v.cudnn}" if v.cudnn else "",
            f"NCCL {v.nccl}" if v.nccl else "") if x) or "CPU only"
        parts.append(f"torch {v.torch} ({built})")
    else:
        parts.append("torch not installed")
    parts += [f"{name} {value}" for name, value in (
        ("TensorFlow", v.tensorflow), ("JAX", v.jax), ("jaxlib", v.jaxlib),
        ("NVIDIA driver", v.driver), ("nvcc", v.nvcc), ("gcc", v.gcc)) if value]
    if not v.driver:
        parts.append("no NVIDIA driver")
    return _r("DR101", "info", "Versions", found="; ".join(parts),
              why="The version matrix is the first thing to compare when a job that works "
                  "elsewhere hangs here.")


def _runtime_vs_driver(v: Versions) -> CheckResult | None:
    runtime = compat.major_minor(v.torch_cuda)
    driver = compat.version(v.driver)
    if runtime is None or driver is None:
        return None
    data = compat.load()
    table = data["cuda_minimum_driver"]
    minimum_text = table["table"].get(runtime)
    title = f"CUDA runtime {runtime} (torch) against driver {v.driver}"
    if minimum_text is None:
        return _r("DR102", "info", title, found=f"CUDA {runtime}",
                  wanted="a CUDA release listed in hangdoctor's compat.json",
                  why="This CUDA release is not in hangdoctor's table; compare by hand.",
                  source=table["source"])
    minimum = compat.version(minimum_text)
    assert minimum is not None
    if driver >= minimum:
        return _r("DR102", "ok", title, found=f"driver {v.driver}", wanted=f">= {minimum_text}",
                  source=table["source"])
    floor_table = data["minor_version_floor"]
    floor_text = floor_table["table"].get(runtime.split(".")[0])
    floor = compat.version(floor_text)
    fix = (f"Install NVIDIA driver {minimum_text} or newer, or a torch build for an older CUDA "
           f"(e.g. `pip install torch --index-url https://download.pytorch.org/whl/cuXYZ` with a "
           f"CUDA the driver supports{f', up to {v.driver_cuda}' if v.driver_cuda else ''}).")
    if floor is not None and driver >= floor:
        return _r("DR102", "warn", title, found=f"driver {v.driver}",
                  wanted=f">= {minimum_text} (CUDA {runtime} minimum)",
                  why=(f"Below CUDA {runtime}'s minimum driver the job relies on CUDA minor "
                       f"version compatibility (driver >= {floor_text}): most kernels run, but "
                       "PTX built for the newer toolkit cannot be JIT-compiled and newer driver "
                       "features are missing, which surfaces as errors or stalls in custom ops "
                       "and compiled kernels."),
                  fix=fix, source=table["source"])
    return _r("DR102", "problem", title, found=f"driver {v.driver}",
              wanted=f">= {minimum_text} (CUDA {runtime} minimum)",
              why=("The driver is too old for this CUDA runtime: CUDA initialisation fails "
                   "(`CUDA driver version is insufficient`) on some ranks, and the ranks that "
                   "did start wait for them in their first collective until the timeout."),
              fix=fix, source=table["source"])


def _nvcc_vs_torch(v: Versions) -> CheckResult | None:
    torch_cuda, nvcc = compat.version(v.torch_cuda), compat.version(v.nvcc)
    if torch_cuda is None or nvcc is None:
        return None
    source = compat.load()["extension_build"]["source"]
    title = f"nvcc {v.nvcc} against torch's CUDA {v.torch_cuda}"
    if torch_cuda.major != nvcc.major:
        return _r("DR103", "problem", title, found=f"nvcc {v.nvcc}",
                  wanted=f"nvcc {torch_cuda.major}.x",
                  why=("torch.utils.cpp_extension refuses to build CUDA extensions across CUDA "
                       "major versions; projects that build custom ops on first import fail, or "
                       "every rank retries the build and waits on the others' build lock."),
                  fix=(f"Put a CUDA {torch_cuda.major}.x toolkit first on PATH "
                       f"(`export CUDA_HOME=/usr/local/cuda-{v.torch_cuda} "
                       "PATH=$CUDA_HOME/bin:$PATH`), or install the torch build for "
                       f"CUDA {nvcc.major}.x."),
                  source=source)
    if torch_cuda.minor != nvcc.minor:
        return _r("DR103", "info", title, found=f"nvcc {v.nvcc}", wanted=f"nvcc {v.torch_cuda}",
                  why="A minor CUDA mismatch builds (torch warns), but extensions are then "
                      "tested against a toolkit torch was not built with.",
                  source=source)
    return _r("DR103", "ok", title, found=f"nvcc {v.nvcc}", source=source)


def _known_bad(v: Versions) -> list[CheckResult]:
    values = v.model_dump()
    results = []
    for entry in compat.load()["known_bad"]:
        matched = True
        for field, spec in entry["when"].items():
            value = compat.version(values.get(field))
            try:
                specifier = SpecifierSet(spec)
            except InvalidSpecifier:
                matched = False
                break
            if value is None or not specifier.contains(value, prereleases=True):
                matched = False
                break
        if matched:
            found = ", ".join(f"{field} {values.get(field)}" for field in entry["when"])
            results.append(_r("DR104", entry["status"], entry["title"], found=found,
                              wanted="not this combination", why=entry["why"],
                              fix=entry["fix"], source=entry["source"]))
    return results


def _extension_locks(v: Versions) -> CheckResult | None:
    if not v.torch_extension_locks:
        return None
    data = compat.load()["stale_extension_lock"]
    return _r("DR105", "warn", "Lock files in the torch extensions build directory",
              found=", ".join(v.torch_extension_locks[:5]), wanted="none while nothing builds",
              why=("torch.utils.cpp_extension.load waits, with no time limit and no message, "
                   "until this lock disappears; a build that was killed leaves it behind, and "
                   "the next start of the job then hangs while loading its custom op."),
              fix="If no build is running: `rm " + " ".join(v.torch_extension_locks[:5]) + "`",
              source=data["source"])


def check(facts: Facts) -> list[CheckResult]:
    """Version checks."""
    v = facts.versions
    results = [_summary(v)]
    results += [r for r in (_runtime_vs_driver(v), _nvcc_vs_torch(v)) if r is not None]
    results += _known_bad(v)
    if (lock := _extension_locks(v)) is not None:
        results.append(lock)
    return results
