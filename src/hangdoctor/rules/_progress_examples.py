"""Example evidence shared by the rules over the instrumentation's progress counters."""

from __future__ import annotations

from hangdoctor.evidence import build as b
from hangdoctor.evidence.model import Bundle, JobRecord, ProgressStatus


def progress_job(
    *statuses: ProgressStatus, hung: bool = True, exit_code: int | None = None
) -> Bundle:
    record = JobRecord(
        started_at=0.0,
        ended_at=100.0,
        exit_code=exit_code,
        progress=statuses,
        hang_declared_s=90.0 if hung else None,
        hang_kind="idle" if hung else None,
    )
    return b.bundle(b.process(1, ppid=None)).model_copy(update={"job": record})


def progress_status(
    rank: int | None,
    *,
    steps: int = 50,
    nonfinite: int = 0,
    wait: float = 1.0,
    batches: int = 50,
    last_loss: float | None = 0.5,
) -> ProgressStatus:
    return ProgressStatus(
        pid=100 + (rank or 0),
        rank=rank,
        updated_at=100.0,
        steps=steps,
        batches=batches,
        data_wait_s=wait,
        losses_seen=steps,
        last_loss=last_loss,
        nonfinite_losses=nonfinite,
        last_nonfinite_at=60.0 if nonfinite else None,
    )
