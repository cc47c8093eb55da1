"""What the GPU timeline rules share: the NVML samples since the job's last progress, and
example timelines in NVML's format (utilization.gpu in %, memory in bytes)."""

from __future__ import annotations

from hangdoctor.analysis.job import JobView
from hangdoctor.evidence import build as b
from hangdoctor.evidence.model import Bundle, GpuSample, JobRecord, TimelineSample

GIB = 2**30


def timeline(utilization: float, used_gib: float, seconds: int = 30,
              progress_until: int = 5) -> tuple[TimelineSample, ...]:
    return tuple(TimelineSample(
        elapsed_s=float(t), steps=min(t, progress_until),
        gpus=(GpuSample(index=0, utilization_percent=utilization,
                        memory_used_bytes=int(used_gib * GIB), memory_total_bytes=80 * GIB),),
    ) for t in range(seconds))


def hung_job(utilization: float, used_gib: float, code: str = "loss.item()") -> Bundle:
    process = b.process(7, b.thread(7, b.frame(f"{b.SITE}/torch/_tensor.py", 1, "item"),
                                    b.frame("train.py", 88, "train", code=code),
                                    name="MainThread", syscall="futex"), ppid=None)
    record = JobRecord(started_at=0.0, timeline=timeline(utilization, used_gib),
                       hang_declared_s=29.0, hang_kind="idle", last_progress_s=5.0)
    return b.bundle(process).model_copy(update={"job": record})


def stalled_samples(job: JobView) -> list[TimelineSample]:
    record = job.record
    if record is None or record.last_progress_s is None or record.hang_declared_s is None:
        return []
    return [s for s in record.timeline if s.elapsed_s > record.last_progress_s and s.gpus]
