"""Rules over the GPU timeline that `hangdoctor run` samples through NVML.

HD402 gpu.kernel_hang: the GPU stays busy at ~100% while the job makes no progress and the host
waits for the device. HD403 gpu.memory_exhausted: device memory at capacity when the job stalled.
CI has no GPU: the examples are in the format NVML reports (utilization.gpu in %, memory in bytes).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from hangdoctor.analysis.frames import blame_frame
from hangdoctor.analysis.job import JobView
from hangdoctor.evidence import build as b
from hangdoctor.evidence.model import Bundle, GpuSample, JobRecord, TimelineSample
from hangdoctor.rules.base import Example, Rule
from hangdoctor.rules.finding import Finding, Severity
from hangdoctor.rules.helpers import at, culprit

_GIB = 2**30
_BUSY_PERCENT = 95.0
_FULL_SHARE = 0.95
# Python calls that wait for the device to finish its queued work.
_SYNCING = re.compile(r"\.item\(\)|\.cpu\(\)|\.tolist\(\)|\.numpy\(\)|synchronize\(|"
                      r"\.to\([^)]*cpu|torch\.cuda\.synchronize")


def _timeline(utilization: float, used_gib: float, seconds: int = 30,
              progress_until: int = 5) -> tuple[TimelineSample, ...]:
    return tuple(TimelineSample(
        elapsed_s=float(t), steps=min(t, progress_until),
        gpus=(GpuSample(index=0, utilization_percent=utilization,
                        memory_used_bytes=int(used_gib * _GIB), memory_total_bytes=80 * _GIB),),
    ) for t in range(seconds))


def _hung_job(utilization: float, used_gib: float, code: str = "loss.item()") -> Bundle:
    process = b.process(7, b.thread(7, b.frame(f"{b.SITE}/torch/_tensor.py", 1, "item"),
                                    b.frame("train.py", 88, "train", code=code),
                                    name="MainThread", syscall="futex"), ppid=None)
    record = JobRecord(started_at=0.0, timeline=_timeline(utilization, used_gib),
                       hang_declared_s=29.0, hang_kind="idle", last_progress_s=5.0)
    return b.bundle(process).model_copy(update={"job": record})


def _stalled_samples(job: JobView) -> list[TimelineSample]:
    record = job.record
    if record is None or record.last_progress_s is None or record.hang_declared_s is None:
        return []
    return [s for s in record.timeline if s.elapsed_s > record.last_progress_s and s.gpus]


class GpuKernelHang(Rule):
    """Busy GPU, idle progress: a device kernel that never completes (often a custom kernel
    looping, or waiting on a peer GPU that never answers)."""

    id = "HD402"
    category = "gpu.kernel_hang"
    summary = "a GPU kernel never completes"
    specificity = 80
    fires_on = (Example("GPU at 100% with no progress, host waiting in .item()",
                        lambda: _hung_job(100.0, 20.0)),)
    quiet_on = (Example("GPU idle during the stall", lambda: _hung_job(0.0, 20.0)),)

    def check(self, job: JobView) -> Iterable[Finding]:
        stalled = _stalled_samples(job)
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


class GpuMemoryFull(Rule):
    """Device memory at capacity when the job stalled."""

    id = "HD403"
    category = "gpu.memory_exhausted"
    summary = "GPU memory at capacity during the stall"
    specificity = 60
    names_culprit = False
    fires_on = (Example("GPU memory full, utilisation fell to 0",
                        lambda: _hung_job(0.0, 79.5)),)
    quiet_on = (Example("memory half used", lambda: _hung_job(0.0, 40.0)),)

    def check(self, job: JobView) -> Iterable[Finding]:
        stalled = _stalled_samples(job)
        if not stalled:
            return
        full = {}
        for gpu in stalled[-1].gpus:
            if gpu.memory_used_bytes and gpu.memory_total_bytes and (
                    gpu.memory_used_bytes / gpu.memory_total_bytes >= _FULL_SHARE):
                full[gpu.index] = gpu
        if not full:
            return
        index, gpu = next(iter(full.items()))
        utilization = gpu.utilization_percent
        yield Finding(
            id=self.id, category=self.category, severity=Severity.ERROR, confidence=0.7,
            title=f"GPU {index} memory at {gpu.memory_used_bytes / gpu.memory_total_bytes:.0%} "
                  "when the job stalled",
            explanation=("Allocations near capacity stall, retry or fail; the caching allocator "
                         "may be freeing and re-allocating in a loop."),
            evidence=(f"GPU {index}: {gpu.memory_used_bytes / _GIB:.1f} of "
                      f"{gpu.memory_total_bytes / _GIB:.1f} GiB used, utilisation "
                      f"{utilization if utilization is not None else '?'}%",),
            fixes=("Lower the peak: smaller batches with gradient accumulation, mixed precision, "
                   "activation checkpointing.",
                   "Check for other processes on the GPU (nvidia-smi) and for tensors kept "
                   "across steps.",
                   "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True reduces fragmentation."),
        )
