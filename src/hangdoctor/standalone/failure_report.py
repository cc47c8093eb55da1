"""The report of a watched job that failed, written by its sidecar once the job is gone: the
final report `hangdoctor run` writes for a failed job (`supervise.final_report`, the pipeline
in Mode.ENDED, verdict `failed`, the kernel log of the job's lifetime), into `failure-N/`.

`run` has the job's output; `watch()` does not. What stands in for its tail is what the
processes recorded as they died: each one's uncaught exception, as Python printed it, prefixed
with its rank as torchrun prefixes a rank's lines (`[rank1]: `), the first failure first. The
rules that name a failure from its traceback then read it as they read `run`'s output.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from hangdoctor.standalone.job_end import JobFailure


def next_failure_number(report_dir: Path) -> int:
    """The first N with no `failure-N` yet: a job restarted after a failure keeps the earlier
    reports."""
    number = 1
    while (report_dir / f"failure-{number}").exists():
        number += 1
    return number


def output_tail(failure: JobFailure) -> tuple[str, ...]:
    """The recorded tracebacks, first failure first, as the job printed them, redacted."""
    from hangdoctor.redact import redact_value

    lines: list[str] = []
    for end in failure.failures:
        if end.traceback is None:
            continue
        prefix = f"[rank{end.rank}]: " if end.rank is not None else ""
        lines += [prefix + redact_value(line) for line in end.traceback.splitlines()]
    return tuple(lines)


def report_failure(
    report_dir: Path,
    status_dir: Path,
    since: float,
    root_pid: int,
    command: tuple[str, ...],
    failure: JobFailure,
) -> int:
    """Diagnose the failure, write `failure-N/` and say it on stderr (the job's)."""
    from hangdoctor.evidence.model import JobRecord
    from hangdoctor.i18n import _
    from hangdoctor.probes.progress import (
        STOPPED_GLOB,
        read_fault_logs,
        read_statuses,
        read_thread_deaths,
        with_sync_source,
    )
    from hangdoctor.redact import redact_argv, redact_value
    from hangdoctor.supervise.final_report import Ending, ending_line, final_report

    statuses = [
        with_sync_source(s).model_copy(
            update={"exit_traceback": redact_value(s.exit_traceback) if s.exit_traceback else None}
        )
        for s in read_statuses(status_dir)
        if s.updated_at >= since - 1.0
    ]
    ended_at = max((end.at for end in failure.failures), default=time.time())
    record = JobRecord(
        command=redact_argv(command),
        started_at=since,
        ended_at=ended_at,
        exit_code=failure.exit_code,
        signal=failure.signal,
        progress=tuple(statuses),
        output_tail=output_tail(failure),
        faults=tuple(read_fault_logs(status_dir)),
        stopped=tuple(read_fault_logs(status_dir, STOPPED_GLOB, when="sigterm")),
        thread_deaths=tuple(read_thread_deaths(status_dir)),
    )
    end = Ending(
        verdict="failed",
        final_code=failure.exit_code,
        exit_code=failure.exit_code,
        signal=failure.signal,
        interrupted=False,
    )
    directory = report_dir / f"failure-{next_failure_number(report_dir)}"
    report = final_report(directory, end, record, None, None, root_pid, {})
    line = ending_line(end, max(0.0, ended_at - since), report.root_cause)
    try:
        sys.stderr.write(f"hangdoctor: {line}\n")
        sys.stderr.write("hangdoctor: " + _("report: {path}", path=directory / "report.md") + "\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
    return 0
