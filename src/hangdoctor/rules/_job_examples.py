"""Example evidence shared by the rules over failed jobs (worker killed, host and GPU memory):
a job that ended with the given output, kernel log and exit code."""

from __future__ import annotations

from hangdoctor.evidence import build as b
from hangdoctor.evidence.model import Bundle, JobRecord, SystemInfo, TimelineSample


def failed_job(
    output: tuple[str, ...] = (),
    kernel: tuple[str, ...] = (),
    exit_code: int = 1,
    timeline: tuple[TimelineSample, ...] = (),
    memory_total: int | None = None,
) -> Bundle:
    return b.bundle(b.process(1, ppid=None)).model_copy(
        update={
            "snapshots": (),
            "system": SystemInfo(memory_total_bytes=memory_total),
            "job": JobRecord(
                command=("python", "train.py"),
                started_at=0.0,
                ended_at=60.0,
                exit_code=exit_code,
                output_tail=output,
                kernel_log=kernel,
                timeline=timeline,
            ),
        }
    )
