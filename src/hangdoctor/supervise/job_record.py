"""The record of a run so far (`JobRecord`): what every capture of the job and its final report
carry, read from what watches the job (the sampler, the tracker, the output log, the probe's
status folder)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from hangdoctor.probes.progress import (
    STOPPED_GLOB,
    read_fault_logs,
    read_offloop_calls,
    read_process_ends,
    read_thread_deaths,
    read_uncaught,
    with_sync_source,
)
from hangdoctor.redact import redact_argv, redact_value
from hangdoctor.supervise.failure_watch import FailureWatch
from hangdoctor.supervise.hangs_seen import HangsSeen
from hangdoctor.supervise.output import LogView
from hangdoctor.supervise.policy import ProgressTracker

if TYPE_CHECKING:
    from hangdoctor.evidence.model import FaultLog, JobRecord
    from hangdoctor.supervise.sampler import TreeSampler


@dataclass(frozen=True)
class JobRecorder:
    """Writes the `JobRecord` of the run as it stands."""

    command: tuple[str, ...]
    started_wall: float
    status_dir: Path | None  # the probe's status folder; None: the job is not instrumented
    sampler: TreeSampler
    tracker: ProgressTracker
    log: LogView
    failure_watch: FailureWatch
    hangs: HangsSeen

    def record(
        self,
        ended_at: float | None = None,
        exit_code: int | None = None,
        sig: int | None = None,
        interrupted: bool = False,
        killed: bool = False,
    ) -> JobRecord:
        """The record now; `ended_at` and what follows once the job has ended."""
        from hangdoctor.evidence.model import JobRecord

        hang = self.hangs.decision()
        status_dir = self.status_dir
        return JobRecord(
            command=redact_argv(self.command),
            started_at=self.started_wall,
            ended_at=ended_at,
            exit_code=exit_code,
            signal=sig,
            interrupted=interrupted,
            killed_by_hangdoctor=killed,
            hang_timeout_s=self.tracker.threshold_s,
            last_progress_s=round(self.tracker.last_progress_s, 3),
            hang_declared_s=round(hang.declared_s, 3) if hang else None,
            hang_kind=hang.kind if hang else None,
            hang_threshold_s=round(hang.threshold_s, 3) if hang else None,
            hang_phase=hang.phase if hang else None,
            job_phase=hang.job_phase if hang else None,
            progress=tuple(with_sync_source(s) for s in self.sampler.statuses),
            timeline=tuple(self.sampler.timeline),
            output_bytes=self.log.total_bytes,
            output_tail=tuple(redact_value(line) for line in self.log.tail_lines()),
            faults=tuple(read_fault_logs(status_dir)) if status_dir else (),
            stopped=self.stopped_stacks(),
            thread_deaths=tuple(read_thread_deaths(status_dir)) if status_dir else (),
            uncaught=tuple(read_uncaught(status_dir)) if status_dir else (),
            process_ends=tuple(read_process_ends(status_dir)) if status_dir else (),
            offloop_calls=tuple(read_offloop_calls(status_dir)) if status_dir else (),
        )

    def stopped_stacks(self) -> tuple[FaultLog, ...]:
        """Each process's stack as the job failed: where SIGTERM stopped it, else where it
        was when a peer's collective timed out (FailureWatch)."""
        if self.status_dir is None:
            return ()
        stopped = read_fault_logs(self.status_dir, STOPPED_GLOB, when="sigterm")
        seen = {s.pid for s in stopped}
        early = self.failure_watch.stacks()
        return (*stopped, *(s for s in early if s.pid not in seen))
