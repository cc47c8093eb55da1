"""HD402 gpu.kernel_hang: Busy GPU, idle progress: a device kernel that never completes (often a
custom kernel looping, or waiting on a peer GPU that never answers)."""

from __future__ import annotations

import re
from collections.abc import Iterable

from hangdoctor.analysis.frames import blame_frame
from hangdoctor.analysis.job import JobView
from hangdoctor.rules.base import Example, Rule
from hangdoctor.rules.finding import Finding, Severity
from hangdoctor.rules.gpu._state import hung_job, stalled_samples
from hangdoctor.rules.helpers import at, culprit
from hangdoctor.taxonomy import Category

_BUSY_PERCENT = 95.0
# Python calls that wait for the device to finish its queued work.
_SYNCING = re.compile(r"\.item\(\)|\.cpu\(\)|\.tolist\(\)|\.numpy\(\)|synchronize\(|"
                      r"\.to\([^)]*cpu|torch\.cuda\.synchronize")


class GpuKernelHang(Rule):
    """Busy GPU, idle progress: a device kernel that never completes (often a custom kernel
    looping, or waiting on a peer GPU that never answers)."""

    id = "HD402"
    category = Category.GPU_KERNEL_HANG
    summary = "a GPU kernel never completes"
    fires_when = (
        "NVML shows a GPU pinned at ~100% since the last progress while the host waits for "
        "the device (`.item()`, `synchronize()`)"
    )
    reads = "capture"
    specificity = 80
    fires_on = (Example("GPU at 100% with no progress, host waiting in .item()",
                        lambda: hung_job(100.0, 20.0)),)
    quiet_on = (Example("GPU idle during the stall", lambda: hung_job(0.0, 20.0)),)

    def check(self, job: JobView) -> Iterable[Finding]:
        stalled = stalled_samples(job)
        if len(stalled) < 3:
            return
        busy = sorted({g.index for s in stalled for g in s.gpus
                       if all((x.utilization_percent or 0) >= _BUSY_PERCENT
                              for t in stalled for x in t.gpus if x.index == g.index)})
        if not busy:
            return
        waiting = None
        for process, thread in job.threads():
            frame = blame_frame(thread.python.frames) if thread.python else None
            if frame is not None and frame.code and _SYNCING.search(frame.code):
                waiting = (process, thread, frame)
                break
        span = stalled[-1].elapsed_s - stalled[0].elapsed_s
        evidence = [f"GPU {', '.join(map(str, busy))} at >= {_BUSY_PERCENT:.0f}% utilisation for "
                    f"{span:.0f} s since the last progress"]
        if waiting is not None:
            evidence.append(f"the host waits for the device at {at(waiting[2])}")
        yield Finding(
            id=self.id, category=self.category, severity=Severity.ERROR,
            confidence=0.8 if waiting else 0.6,
            title=f"GPU {busy[0]} stays busy but the job makes no progress: a kernel that never "
                  "completes",
            explanation=("The device is fully busy while nothing progresses and the host waits "
                         "for it: a kernel is looping (a custom CUDA kernel's loop bound, a "
                         "spin-wait on a flag) or waiting for a peer over NVLink/PCIe."),
            culprit=culprit(job, waiting[0], waiting[1], waiting[2]) if waiting else None,
            evidence=tuple(evidence),
            fixes=("Run with CUDA_LAUNCH_BLOCKING=1 on a small input to find the kernel that "
                   "does not return (the Python line then blocks at the launch).",
                   "For a custom kernel, check loop bounds and grid-stride loops; run it under "
                   "compute-sanitizer.",
                   "In a distributed job, an NCCL kernel at 100% waits for a peer: see the other "
                   "ranks (NCCL_DEBUG=INFO)."),
        )
