"""What the GPU rules share: the NVML readings taken while the job was stuck (the supervisor's
timeline since the last progress, and the capture's own snapshots) and the threads that wait for
the device (their examples' evidence is in `examples.toml`)."""

from __future__ import annotations

from dataclasses import dataclass

from hangdoctor.analysis.device import DeviceWait, device_wait
from hangdoctor.analysis.device import process_uses_gpu as uses_gpu
from hangdoctor.analysis.job import JobView
from hangdoctor.evidence.model import (
    GpuSample,
    ProcessEvidence,
    ThreadEvidence,
    TimelineSample,
)
from hangdoctor.rules.helpers import frames_of


def stalled_samples(job: JobView) -> list[TimelineSample]:
    """The supervisor's samples between the last progress and the hang, with GPU readings."""
    record = job.record
    if record is None or record.last_progress_s is None or record.hang_declared_s is None:
        return []
    return [s for s in record.timeline if s.elapsed_s > record.last_progress_s and s.gpus]


def readings(job: JobView) -> list[tuple[GpuSample, ...]]:
    """Every NVML reading of the stuck job: the timeline's since the last progress, then the
    capture's snapshots'."""
    found = [s.gpus for s in stalled_samples(job)]
    found += [s.gpus for s in job.bundle.snapshots if s.gpus]
    return found


def busy_gpus(seen: list[tuple[GpuSample, ...]], at_least: float) -> list[int]:
    """GPUs at or above `at_least` % utilisation in every reading."""
    indices = sorted({g.index for reading in seen for g in reading})
    return [
        i
        for i in indices
        if all(
            (g.utilization_percent or 0.0) >= at_least
            for reading in seen
            for g in reading
            if g.index == i
        )
    ]


@dataclass(frozen=True)
class WaitingThread:
    """A thread that waited for the device in every snapshot, at the same place."""

    process: ProcessEvidence
    thread: ThreadEvidence
    wait: DeviceWait


def _same_place(first: DeviceWait, other: DeviceWait) -> bool:
    a, b_ = first.frame, other.frame
    return (a is None) == (b_ is None) and (
        a is None or b_ is None or (a.file, a.line) == (b_.file, b_.line)
    )


def waiting_threads(job: JobView) -> list[WaitingThread]:
    """Threads that wait for the device in every snapshot that saw them, at the same line."""
    found = []
    for process, thread in job.threads():
        on_gpu = uses_gpu(process)
        waits = [
            device_wait(frames_of(sample), gpu=on_gpu)
            for _, sample in job.samples(process.pid, thread.tid)
            if sample.python is not None and sample.python.frames
        ]
        if not waits or any(w is None for w in waits):
            continue
        first = waits[0]
        assert first is not None
        if all(w is not None and _same_place(first, w) for w in waits):
            found.append(WaitingThread(process, thread, first))
    return found
