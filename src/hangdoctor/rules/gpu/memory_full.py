"""HD403 gpu.memory_exhausted: device memory at capacity while the job was stuck. PyTorch's
caching allocator keeps what it allocated once, so a healthy job sits near capacity too: full
memory is context (a warning), and the root cause only when a stuck thread is inside the
allocator (allocating, or freeing the cache to retry)."""

from __future__ import annotations

import re
from collections.abc import Iterable

from hangdoctor.analysis.job import JobView, thread_label
from hangdoctor.evidence.model import Frame, GpuSample, ProcessEvidence, ThreadEvidence
from hangdoctor.i18n import _
from hangdoctor.rules.base import Rule
from hangdoctor.rules.confidence import Confidence
from hangdoctor.rules.finding import Finding, Severity
from hangdoctor.rules.gpu._state import readings
from hangdoctor.rules.helpers import at, culprit, frames_of
from hangdoctor.taxonomy import Category

GIB = 2**30

_FULL_SHARE = 0.95
# The allocator at work: PyTorch's caching allocator (allocating, or releasing its cache to
# retry an allocation that failed), and the CUDA calls underneath it.
_ALLOCATING_NATIVE = re.compile(
    r"CUDACachingAllocator|^cudaMalloc|^cudaFree|^cuMemAlloc|^cuMemFree|^cuMemCreate"
)
_ALLOCATING_PYTHON = (("torch/cuda/memory.py", "empty_cache"),)


def _in_allocator(frames: tuple[Frame, ...]) -> Frame | None:
    """The frame that shows the thread allocating or freeing device memory, if any."""
    for frame in frames:
        if frame.native and _ALLOCATING_NATIVE.search(frame.function):
            return frame
        path = frame.file.replace("\\", "/")
        if not frame.native and any(
            path.endswith(file) and frame.function.endswith(name)
            for file, name in _ALLOCATING_PYTHON
        ):
            return frame
    return None


def _allocating(job: JobView) -> tuple[ProcessEvidence, ThreadEvidence, Frame] | None:
    for process, thread in job.threads():
        frame = _in_allocator(frames_of(thread))
        if frame is not None:
            return process, thread, frame
    return None


class GpuMemoryFull(Rule):
    """GPU memory at capacity during the stall

    Fires when: NVML shows device memory at capacity when the job stalled: a warning for context
    (PyTorch's caching allocator keeps memory in healthy jobs too), the root cause when a stuck
    thread is inside the allocator

    Why: PyTorch's caching allocator keeps what it allocated once, so a healthy job sits near
    capacity too: full memory alone is context. It is the cause when a stuck thread is inside the
    allocator, which near capacity frees its cache and retries, so allocations stall or fail.

    Instead: Lower the peak (smaller batches with gradient accumulation, mixed precision, activation
    checkpointing), check for other processes on the GPU (`nvidia-smi`) and tensors kept across
    steps, and set `PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True`;
    `torch.cuda.memory_stats()["num_alloc_retries"]` counts the retries.
    """

    id = "HD403"
    category = Category.GPU_MEMORY_EXHAUSTED
    reads = "capture"
    default_severity = Severity.WARNING
    specificity = 60
    names_culprit = False

    def check(self, job: JobView) -> Iterable[Finding]:
        seen = readings(job)
        if not seen:
            return
        full: dict[int, GpuSample] = {}
        for sample in seen[-1]:
            if (
                sample.memory_used_bytes
                and sample.memory_total_bytes
                and (sample.memory_used_bytes / sample.memory_total_bytes >= _FULL_SHARE)
            ):
                full[sample.index] = sample
        if not full:
            return
        index, sample = next(iter(full.items()))
        used, total = sample.memory_used_bytes or 0, sample.memory_total_bytes or 1
        utilization = sample.utilization_percent
        evidence = [
            _(
                "GPU {index}: {used:.1f} of {total:.1f} GiB used, utilisation {utilization}%",
                index=index,
                used=used / GIB,
                total=total / GIB,
                utilization=utilization if utilization is not None else "?",
            )
        ]
        allocating = _allocating(job)
        if allocating is not None:
            process, thread, frame = allocating
            evidence.append(
                _(
                    "{thread} of pid {pid} is inside the allocator: {function}",
                    thread=thread_label(thread),
                    pid=process.pid,
                    function=frame.function,
                )
                if frame.native
                else _(
                    "{thread} of pid {pid} is inside the allocator: {function} at {place}",
                    thread=thread_label(thread),
                    pid=process.pid,
                    function=frame.function,
                    place=at(frame),
                )
            )
        yield self.finding(
            severity=Severity.ERROR if allocating else Severity.WARNING,
            confidence=Confidence.LIKELY if allocating else Confidence.GUESS,
            title=_(
                "GPU {index} memory at {share:.0%} and the job is stuck allocating",
                index=index,
                share=used / total,
            )
            if allocating
            else _(
                "GPU {index} memory at {share:.0%} when the job stalled (context, not a cause "
                "by itself)",
                index=index,
                share=used / total,
            ),
            explanation=_(
                "The stuck thread is inside PyTorch's caching allocator: near capacity it frees "
                "its cache and retries, and allocations can stall or fail."
            )
            if allocating
            else _(
                "PyTorch's caching allocator keeps the memory it allocated once, so a healthy "
                "job sits near capacity too: this alone does not explain the stall. Look at the "
                "root cause above; full memory matters if the job then runs out of memory or "
                "slows down retrying allocations."
            ),
            culprit=culprit(job, allocating[0], allocating[1]) if allocating else None,
            evidence=tuple(evidence),
            fixes=(
                _(
                    "Lower the peak: smaller batches with gradient accumulation, mixed precision, "
                    "activation checkpointing."
                ),
                _(
                    "Check for other processes on the GPU (nvidia-smi) and for tensors kept "
                    "across steps."
                ),
                _(
                    "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True reduces fragmentation; "
                    "torch.cuda.memory_stats()['num_alloc_retries'] counts the retries."
                ),
            ),
        )
