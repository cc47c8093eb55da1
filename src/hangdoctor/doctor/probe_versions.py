"""Probe versions: Python, torch and what it was built with, TensorFlow, JAX, the NVIDIA driver,
nvcc, gcc. torch is not imported (that alone takes seconds): its version.py is read instead,
and cuDNN/NCCL come from the nvidia-* wheels torch depends on."""

from __future__ import annotations

import ast
import importlib.metadata as metadata
import importlib.util
import os
import platform
import re
import shutil
from pathlib import Path

from hangdoctor import bounded
from hangdoctor.doctor.facts import Versions
from hangdoctor.evidence.model import ProbeError

_DRIVER = re.compile(r"Kernel Module(?: for \w+)?\s+(\d+\.\d+(?:\.\d+)?)")
_NVCC = re.compile(r"release (\d+\.\d+)")


def distribution_name(dist: metadata.Distribution) -> str | None:
    """A distribution's name; None when its metadata is broken and has none."""
    found = dist.metadata  # parsed on each access: read it once
    if "Name" not in found:
        return None
    return found["Name"]


def distribution_versions() -> dict[str, str]:
    """Installed distributions by normalised name."""
    found: dict[str, str] = {}
    for dist in metadata.distributions():
        name = distribution_name(dist)
        if name:
            found.setdefault(re.sub(r"[-_.]+", "-", name).lower(), dist.version)
    return found


def torch_build() -> tuple[str | None, str | None]:
    """(cuda, hip) from torch/version.py, read without importing torch."""
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        return None, None
    path = Path(next(iter(spec.submodule_search_locations))) / "version.py"
    try:
        tree = ast.parse(path.read_text("utf-8"))
    except (OSError, SyntaxError, ValueError):
        return None, None
    values: dict[str, object] = {}
    for node in tree.body:
        target = value = None
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign):
            target, value = node.target, node.value
        if isinstance(target, ast.Name) and value is not None:
            try:
                values[target.id] = ast.literal_eval(value)
            except ValueError:
                continue
    cuda, hip = values.get("cuda"), values.get("hip")
    return (str(cuda) if cuda else None), (str(hip) if hip else None)


def driver_from_proc(text: str | None) -> str | None:
    """The kernel module's version from /proc/driver/nvidia/version."""
    match = _DRIVER.search(text or "")
    return match[1] if match else None


def read_proc_driver() -> str | None:
    """/proc/driver/nvidia/version, or None without an NVIDIA driver."""
    try:
        return Path("/proc/driver/nvidia/version").read_text()
    except OSError:
        return None


def extension_locks(environ: dict[str, str]) -> tuple[str, ...]:
    """`lock` files in torch.utils.cpp_extension's build directory."""
    root = environ.get("TORCH_EXTENSIONS_DIR")
    if root is None:
        cache = environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
        root = os.path.join(cache, "torch_extensions")
    base = Path(root)
    if not base.is_dir():
        return ()
    try:
        locks = [*base.glob("*/lock"), *base.glob("*/*/lock")]
    except OSError:
        return ()
    return tuple(sorted(str(p) for p in locks))[:20]


def _pick(dists: dict[str, str], *names: str) -> str | None:
    return next((dists[n] for n in names if n in dists), None)


def probe_versions(
    dists: dict[str, str], environ: dict[str, str]
) -> tuple[Versions, list[ProbeError]]:
    """Versions, and the probes that failed (a missing tool is a fact, not a failure)."""
    failures: list[ProbeError] = []
    cuda, hip = torch_build() if "torch" in dists else (None, None)
    nvcc_path = shutil.which("nvcc")
    if nvcc_path is None and environ.get("CUDA_HOME"):
        candidate = Path(environ["CUDA_HOME"]) / "bin" / "nvcc"
        nvcc_path = str(candidate) if candidate.is_file() else None
    nvcc = None
    if nvcc_path:
        out, failure = bounded.command("nvcc", [nvcc_path, "--version"])
        match = _NVCC.search(out or "")
        nvcc = match[1] if match else None
        if failure:
            failures.append(failure)
    gcc = None
    if gcc_path := shutil.which("gcc"):
        out, failure = bounded.command("gcc", [gcc_path, "-dumpfullversion", "-dumpversion"])
        gcc = (out or "").strip() or None
        if failure:
            failures.append(failure)
    versions = Versions(
        python=platform.python_version(),
        torch=dists.get("torch"),
        torch_cuda=cuda,
        torch_hip=hip,
        cudnn=_pick(dists, "nvidia-cudnn-cu13", "nvidia-cudnn-cu12", "nvidia-cudnn-cu11"),
        nccl=_pick(dists, "nvidia-nccl-cu13", "nvidia-nccl-cu12", "nvidia-nccl-cu11"),
        tensorflow=_pick(dists, "tensorflow", "tensorflow-cpu", "tf-nightly"),
        jax=dists.get("jax"),
        jaxlib=dists.get("jaxlib"),
        keras=_pick(dists, "keras", "tf-keras"),
        driver=driver_from_proc(read_proc_driver()),
        nvcc=nvcc,
        gcc=gcc,
        torch_extension_locks=extension_locks(environ),
    )
    return versions, failures
