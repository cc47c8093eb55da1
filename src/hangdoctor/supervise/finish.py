"""The end of a run: the final report once the job has exited, the one line that says how it
ended, and the exit code to pass on (the job's own: no failure of hangdoctor's replaces it)."""

from __future__ import annotations

import contextlib
import os
import threading
import time
import traceback
from pathlib import Path
from typing import TYPE_CHECKING

from hangdoctor.i18n import _
from hangdoctor.supervise.job_capture import JobCapture
from hangdoctor.supervise.say import say

if TYPE_CHECKING:
    from hangdoctor.evidence.model import JobRecord, SystemInfo
    from hangdoctor.report.model import Report
    from hangdoctor.supervise.final_report import Ending


class ReportingWarmUp:
    """Imports the capture, rules and reports and reads the host facts while the job runs, on
    the spare core, so that the final report after the job exits is quick."""

    def __init__(self) -> None:
        self.system: SystemInfo | None = None
        self._thread = threading.Thread(target=self._run, name="warm-up", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        with contextlib.suppress(Exception):
            import hangdoctor.report.render_terminal
            import hangdoctor.supervise.final_report
            import hangdoctor.supervise.hang_capture  # noqa: F401
            from hangdoctor.probes.system import read_system

            self.system = read_system(None)


def finish(
    returncode: int,
    capture: JobCapture,
    warm_up: ReportingWarmUp,
    signalled: bool,
    killed: bool,
) -> int:
    """Write the final report and say how the job ended; the exit code hangdoctor exits with.
    `signalled`: the user sent the job a signal; `killed`: hangdoctor ended it (`--on-hang
    kill`)."""
    from hangdoctor.supervise.final_report import ending, final_report

    end = ending(returncode, signalled, killed)
    record = capture.recorder.record(
        time.time(), end.exit_code, end.signal, end.interrupted, killed=killed
    )
    report_dir = capture.report_dir
    try:
        report = final_report(
            report_dir,
            end,
            record,
            capture.hangs.current,
            capture.system if capture.system is not None else warm_up.system,
            capture.pid,
            capture.hangs.artifacts(),
            gaps=capture.recorder.sampler.gaps(),
            live=capture.interrupted,
        )
    except Exception as error:
        _say_unreported(end, report_dir, error)
        return end.final_code
    _say_ending(end, record, report, report_dir)
    return end.final_code


def _say_unreported(end: Ending, report_dir: Path, error: Exception) -> None:
    """The job's ending, and why no final report was written."""
    from hangdoctor.report.render_markdown import verdict_word

    if isinstance(error, OSError):
        say(
            _(
                "job {verdict} (exit {code}); warning: cannot write the report to {path} ({error})",
                verdict=verdict_word(end.verdict),
                code=end.final_code,
                path=report_dir,
                error=error.strerror or error,
            )
        )
        return
    if os.environ.get("HANGDOCTOR_DEBUG"):
        traceback.print_exc()
    say(
        _(
            "job {verdict} (exit {code}); internal error while writing the report: "
            "{error_type}: {error} (please report it)",
            verdict=verdict_word(end.verdict),
            code=end.final_code,
            error_type=type(error).__name__,
            error=error,
        )
    )


def _say_ending(end: Ending, record: JobRecord, report: Report, report_dir: Path) -> None:
    """How the job ended, its root cause when it did not complete, and where the report is."""
    from hangdoctor.supervise.final_report import ending_line

    duration = record.ended_at - record.started_at if record.ended_at else 0.0
    root = report.root_cause if end.verdict != "completed" else None
    say(ending_line(end, duration, root))
    say(_("report: {path}", path=report_dir / "report.md"))
