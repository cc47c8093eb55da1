"""HD403 gpu.memory_exhausted: Device memory at capacity when the job stalled."""

from __future__ import annotations

from collections.abc import Iterable

from hangdoctor.analysis.job import JobView
from hangdoctor.rules.base import Example, Rule
from hangdoctor.rules.finding import Finding, Severity
from hangdoctor.rules.gpu._state import GIB, hung_job, stalled_samples
from hangdoctor.taxonomy import Category

_FULL_SHARE = 0.95


class GpuMemoryFull(Rule):
    """Device memory at capacity when the job stalled."""

    id = "HD403"
    category = Category.GPU_MEMORY_EXHAUSTED
    summary = "GPU memory at capacity during the stall"
    fires_when = (
        "NVML shows device memory at capacity when the job stalled"
    )
    reads = "capture"
    specificity = 60
    names_culprit = False
    fires_on = (Example("GPU memory full, utilisation fell to 0",
                        lambda: hung_job(0.0, 79.5)),)
    quiet_on = (Example("memory half used", lambda: hung_job(0.0, 40.0)),)

    def check(self, job: JobView) -> Iterable[Finding]:
        stalled = stalled_samples(job)
        if not stalled:
            return
        full = [(gpu, used, total) for gpu in stalled[-1].gpus
                if (used := gpu.memory_used_bytes) and (total := gpu.memory_total_bytes)
                and used / total >= _FULL_SHARE]
        if not full:
            return
        gpu, used, total = full[0]
        index = gpu.index
        utilization = gpu.utilization_percent
        yield Finding(
            id=self.id, category=self.category, severity=Severity.ERROR, confidence=0.7,
            title=f"GPU {index} memory at {used / total:.0%} "
                  "when the job stalled",
            explanation=("Allocations near capacity stall, retry or fail; the caching allocator "
                         "may be freeing and re-allocating in a loop."),
            evidence=(f"GPU {index}: {used / GIB:.1f} of "
                      f"{total / GIB:.1f} GiB used, utilisation "
                      f"{utilization if utilization is not None else '?'}%",),
            fixes=("Lower the peak: smaller batches with gradient accumulation, mixed precision, "
                   "activation checkpointing.",
                   "Check for other processes on the GPU (nvidia-smi) and for tensors kept "
                   "across steps.",
                   "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True reduces fragmentation."),
        )
