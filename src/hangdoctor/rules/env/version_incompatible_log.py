"""HD550 env.version_incompatible: The framework, CUDA and driver versions do not fit this GPU or
each other."""

from __future__ import annotations

from collections.abc import Iterable

from hangdoctor.analysis.job import JobView
from hangdoctor.analysis.logs import LogKind, LogMatch
from hangdoctor.i18n import _
from hangdoctor.rules._log_rule import LogKindsRule
from hangdoctor.rules.confidence import Confidence
from hangdoctor.rules.finding import Finding
from hangdoctor.rules.log_helpers import cite
from hangdoctor.taxonomy import Category


def _cuda_version(encoded: str) -> str:
    """CUDA's integer version (11040) as 11.4."""
    value = int(encoded)
    return f"{value // 1000}.{(value % 1000) // 10}"


class VersionIncompatible(LogKindsRule):
    """mismatched PyTorch / CUDA / driver versions

    Fires when: `no kernel image is available`, an unsupported `sm_XX`, a driver too old for the
    CUDA runtime

    Why: PyTorch wheels carry CUDA kernels compiled for a set of GPU architectures and need a driver
    at least as new as their CUDA runtime. A build without kernels for this GPU, or a driver too old
    for the runtime, fails at the first CUDA call (`no kernel image is available`), or worse,
    part-way into a run on one node of many.

    Instead: Install a build that matches the GPU and driver (the selector at pytorch.org, e.g. `pip
    install torch --index-url https://download.pytorch.org/whl/cu121`), or upgrade the driver; check
    with `hangdoctor doctor` before a big run.
    """

    id = "HD550"
    category = Category.ENV_VERSION_INCOMPATIBLE
    specificity = 85
    kinds = (
        LogKind.NO_KERNEL_IMAGE,
        LogKind.ARCH_UNSUPPORTED,
        LogKind.ARCH_SUPPORTED,
        LogKind.DRIVER_INSUFFICIENT,
        LogKind.DRIVER_TOO_OLD,
    )

    def explain(self, job: JobView, found: list[LogMatch]) -> Iterable[Finding]:
        kinds = {m.kind for m in found}
        arch = next((m for m in found if m.kind == LogKind.ARCH_UNSUPPORTED), None)
        supported = next((m for m in found if m.kind == LogKind.ARCH_SUPPORTED), None)
        old = next((m for m in found if m.kind == LogKind.DRIVER_TOO_OLD), None)
        if kinds & {LogKind.NO_KERNEL_IMAGE, LogKind.ARCH_UNSUPPORTED}:
            gpu = f" ({arch.fields['gpu']}, {arch.fields['arch']})" if arch else ""
            title = _("This PyTorch build has no code for this GPU{gpu}", gpu=gpu)
            explanation = (
                _(
                    "The CUDA kernels in the installed build (or in an extension) were "
                    "not compiled for this GPU's architecture; the build supports {archs}.",
                    archs=supported.fields["archs"].strip(),
                )
                if supported
                else _(
                    "The CUDA kernels in the installed build (or in an extension) were "
                    "not compiled for this GPU's architecture."
                )
            )
            fixes = (
                _(
                    "Compare `python -c 'import torch; print(torch.__version__, "
                    "torch.cuda.get_arch_list(), torch.cuda.get_device_capability())'`, then "
                    "install a build that includes your GPU, e.g. `pip install torch "
                    "--index-url https://download.pytorch.org/whl/cu128` (newer GPUs need newer "
                    "CUDA builds; old GPUs may need an older torch)."
                ),
                _(
                    "For your own CUDA extensions, rebuild them with TORCH_CUDA_ARCH_LIST set to "
                    "your GPU's capability (e.g. TORCH_CUDA_ARCH_LIST=9.0)."
                ),
            )
        else:
            supports = (
                _(
                    " (it supports CUDA up to {version})",
                    version=_cuda_version(old.fields["found"]),
                )
                if old
                else ""
            )
            title = _(
                "The NVIDIA driver is too old for this PyTorch's CUDA{supports}", supports=supports
            )
            explanation = _(
                "The CUDA runtime bundled with PyTorch needs a newer driver than the "
                "one installed{supports}.",
                supports=supports,
            )
            fixes = (
                _(
                    "Upgrade the NVIDIA driver (`nvidia-smi` shows the highest CUDA version it "
                    "supports), or install a PyTorch build for a CUDA that driver supports, e.g. "
                    "`pip install torch --index-url https://download.pytorch.org/whl/cu118`."
                ),
                _(
                    "In a container the driver is the host's: the host driver must be new "
                    "enough for the image's CUDA (or use the CUDA forward-compatibility package "
                    "on data-centre GPUs)."
                ),
            )
        yield self.finding(
            confidence=Confidence.PROVEN,
            title=title,
            explanation=explanation,
            evidence=tuple(cite(found)),
            fixes=fixes,
        )
