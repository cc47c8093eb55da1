"""HD402 gpu.kernel_hang: the host waits for the device and the GPU stays busy: a device kernel
that never completes (often a custom kernel looping, or waiting on a peer GPU that never
answers)."""

from __future__ import annotations

from collections.abc import Iterable

from hangdoctor.analysis.frames import short_location
from hangdoctor.analysis.job import JobView, thread_label
from hangdoctor.i18n import _
from hangdoctor.rules.base import Rule
from hangdoctor.rules.confidence import Confidence
from hangdoctor.rules.finding import Finding
from hangdoctor.rules.gpu._state import (
    WaitingThread,
    busy_gpus,
    readings,
    stalled_samples,
    waiting_threads,
)
from hangdoctor.rules.helpers import at, culprit
from hangdoctor.taxonomy import Category

_BUSY_PERCENT = 95.0


def _waiter(job: JobView) -> WaitingThread | None:
    """The thread to blame: one waiting for the device outside torch.distributed (a rank waiting
    in a collective is the cross-rank rules' to explain)."""
    return next((w for w in waiting_threads(job) if not w.wait.in_collective), None)


class GpuKernelHang(Rule):
    """a GPU kernel never completes

    Fires when: a host thread waits for the device (`.item()`, `.cpu()`, `synchronize()`;
    `cudaStreamSynchronize` in native frames) in every snapshot while NVML shows the GPU pinned at
    ~100%; or, under `run`, the GPU stays pinned from the last progress on

    Why: The host waits for the device (`.item()`, `.cpu()`, `synchronize()`) until the work queued
    before it finishes. A kernel that never completes (a custom kernel's loop bound, a spin-wait on
    a flag, an NCCL kernel waiting for a peer GPU) keeps the GPU at 100% and the host thread waiting
    forever, often spinning a CPU core in CUDA's polling.

    Instead: Find the kernel with `CUDA_LAUNCH_BLOCKING=1` on a small input (the Python line then
    blocks at the launch); check custom kernels' loop bounds and grid-stride loops and run them
    under `compute-sanitizer`; for an NCCL kernel, look at the other ranks (`NCCL_DEBUG=INFO`).
    """

    id = "HD402"
    category = Category.GPU_KERNEL_HANG
    reads = "capture"
    specificity = 80

    def check(self, job: JobView) -> Iterable[Finding]:
        seen = readings(job)
        busy = busy_gpus(seen, _BUSY_PERCENT) if seen else []
        waiting = _waiter(job)
        if waiting is None and not (busy and len(stalled_samples(job)) >= 3):
            return  # nothing waits for the device, and no long view of a busy GPU either
        evidence = [self._utilisation(job, busy, len(seen))]
        if waiting is not None:
            wait = waiting.wait
            how = _("native frames") if wait.native else _("its Python line")
            evidence.append(
                _(
                    "{thread} of pid {pid} waits for the device in `{call}` ({how}) at "
                    "{place}, in every snapshot",
                    thread=thread_label(waiting.thread),
                    pid=waiting.process.pid,
                    call=wait.call,
                    how=how,
                    place=at(wait.frame),
                )
            )
        confidence = (
            Confidence.STRONG
            if busy and waiting
            else Confidence.PLAUSIBLE
            if busy
            else Confidence.POSSIBLE
            if seen
            else Confidence.EVEN
        )
        yield self.finding(
            confidence=confidence,
            title=_title(busy, bool(seen), waiting),
            explanation=_explanation(dump_only=job.record is None),
            culprit=culprit(job, waiting.process, waiting.thread, waiting.wait.frame)
            if waiting is not None
            else None,
            evidence=tuple(evidence),
            fixes=(
                _(
                    "Run with CUDA_LAUNCH_BLOCKING=1 on a small input to find the kernel that "
                    "does not return (the Python line then blocks at the launch)."
                ),
                _(
                    "For a custom kernel, check loop bounds and grid-stride loops; run it under "
                    "compute-sanitizer."
                ),
                _(
                    "In a distributed job, an NCCL kernel at 100% waits for a peer: see the other "
                    "ranks (NCCL_DEBUG=INFO)."
                ),
            ),
        )

    @classmethod
    def _utilisation(cls, job: JobView, busy: list[int], readings_seen: int) -> str:
        """What NVML said of the GPUs: busy all along, idle, or nothing (no NVML)."""
        if busy:
            span = cls._span(job)
            gpus = ", ".join(map(str, busy))
            return (
                _(
                    "GPU {gpus} at >= {percent:.0f}% utilisation in all {count} NVML readings "
                    "over {span:.0f} s without progress",
                    gpus=gpus,
                    percent=_BUSY_PERCENT,
                    count=readings_seen,
                    span=span,
                )
                if span
                else _(
                    "GPU {gpus} at >= {percent:.0f}% utilisation in all {count} NVML readings",
                    gpus=gpus,
                    percent=_BUSY_PERCENT,
                    count=readings_seen,
                )
            )
        if readings_seen:
            return _(
                "NVML shows no GPU busy in {count} readings: the queued work "
                "is not running, it waits for something else",
                count=readings_seen,
            )
        return _("GPU utilisation unknown: NVML (nvidia-ml-py) was not available")

    @staticmethod
    def _span(job: JobView) -> float:
        stalled = stalled_samples(job)
        if len(stalled) >= 2:
            return stalled[-1].elapsed_s - stalled[0].elapsed_s
        return job.sampled_span_s


def _title(busy: list[int], seen: bool, waiting: WaitingThread | None) -> str:
    where = (
        _(" at {where}", where=short_location(waiting.wait.frame))
        if waiting is not None and waiting.wait.frame is not None
        else ""
    )
    if busy:
        return _(
            "GPU {gpu} stays busy and the job makes no progress: a kernel that never "
            "completes{where}",
            gpu=busy[0],
            where=where,
        )
    if seen:
        return _(
            "The host waits for GPU work that never completes{where}; the GPU is idle",
            where=where,
        )
    return _("The host waits for GPU work that never completes{where}", where=where)


def _explanation(*, dump_only: bool) -> str:
    return _(
        "The host thread is waiting for the device to finish the work queued before its "
        "line, and the device never finishes: a kernel is looping (a custom CUDA "
        "kernel's loop bound, a spin-wait on a flag) or waiting for a peer over "
        "NVLink/PCIe; with the GPU idle, the queued work itself waits (an event on "
        "another stream, a host callback). The waiting thread may use a full CPU core: "
        "CUDA's default synchronisation polls; it is not computing."
    ) + (
        _(
            " A dump sees only a moment: if one step of this job can take longer than "
            "the dump's span, dump again with `--samples 5 --interval 2`."
        )
        if dump_only
        else ""
    )
