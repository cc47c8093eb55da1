"""HD401 gpu.memory_exhausted: CUDA ran out of device memory."""

from __future__ import annotations

from collections.abc import Iterable

from hangdoctor.analysis.job import JobView
from hangdoctor.analysis.logs import scan
from hangdoctor.rules._job_examples import failed_job
from hangdoctor.rules.base import Example, Rule
from hangdoctor.rules.finding import Finding, Severity
from hangdoctor.taxonomy import Category


class GpuMemoryExhausted(Rule):
    """CUDA ran out of device memory."""

    id = "HD401"
    category = Category.GPU_MEMORY_EXHAUSTED
    summary = "GPU memory exhausted"
    fires_when = (
        "`CUDA out of memory` in the job's output"
    )
    reads = "capture"
    specificity = 70
    names_culprit = False
    fires_on = (
        Example("CUDA out of memory", lambda: failed_job((
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has "
            "a total capacity of 79.15 GiB of which 1.23 GiB is free.",))),
    )
    quiet_on = (
        Example("host memory error only", lambda: failed_job(("MemoryError",))),
    )

    def check(self, job: JobView) -> Iterable[Finding]:
        record = job.bundle.job
        if record is None:
            return
        matches = [m for m in scan(record.output_tail) if m.kind == "cuda_oom"]
        if not matches:
            return
        yield Finding(
            id=self.id, category=self.category, severity=Severity.ERROR, confidence=0.95,
            title="GPU memory exhausted (CUDA out of memory)",
            explanation="An allocation on the GPU failed because device memory was full.",
            evidence=tuple(f"job output: {m.line}" for m in matches[:3]),
            fixes=("Lower the peak: smaller batch size with gradient accumulation, mixed "
                   "precision (torch.autocast), activation checkpointing.",
                   "Look for memory kept alive across steps (losses.append(loss)), and check "
                   "fragmentation with PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True.",
                   "Check that no other process uses the same GPU (nvidia-smi)."),
        )
