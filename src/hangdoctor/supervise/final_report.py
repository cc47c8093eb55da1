"""What `run` reports when the job has ended: how it ended (the verdict and the exit code to
pass on) and the final report in the report directory."""

from __future__ import annotations

import signal
import time
from dataclasses import dataclass
from pathlib import Path

from hangdoctor import __version__
from hangdoctor.errors import ExitCode
from hangdoctor.evidence.model import Bundle, JobRecord, ProbeError, SystemInfo
from hangdoctor.i18n import _
from hangdoctor.pipeline import Context, Mode, diagnose
from hangdoctor.probes.kernel_log import read_kernel_log
from hangdoctor.probes.system import read_system
from hangdoctor.report.model import Report, Verdict
from hangdoctor.rules.finding import Finding
from hangdoctor.supervise.hang_capture import HangReport
from hangdoctor.supervise.launch import exit_status


@dataclass(frozen=True)
class Ending:
    """How the job ended, and what hangdoctor exits with."""

    verdict: Verdict
    final_code: int  # what hangdoctor exits with
    exit_code: int  # the job's own, shell-style (128+N for signal N)
    signal: int | None
    interrupted: bool


def ending(returncode: int, signals_received: bool, killed_by_us: bool) -> Ending:
    """The verdict from Popen's returncode: a job hangdoctor ended is `hung` (exit 124); one
    the user stopped is `interrupted`; otherwise its exit code decides."""
    exit_code, sig = exit_status(returncode)
    interrupted = (
        signals_received
        or sig == signal.SIGINT
        or (exit_code == ExitCode.INTERRUPTED and not killed_by_us)
    )
    verdict: Verdict
    if killed_by_us:
        verdict, final = "hung", int(ExitCode.HUNG_JOB_ENDED)
    elif interrupted:
        verdict, final = "interrupted", exit_code
    elif exit_code == 0:
        verdict, final = "completed", 0
    else:
        verdict, final = "failed", exit_code
    return Ending(verdict, final, exit_code, sig, interrupted)


def ending_line(end: Ending, seconds: float, root: Finding | None) -> str:
    """`job failed (exit 1) after 12.0 s`, then the root cause's category and title, if given."""
    from hangdoctor.report.render_markdown import verdict_word

    fields = {"verdict": verdict_word(end.verdict), "code": end.final_code, "seconds": seconds}
    if root is None:
        return _("job {verdict} (exit {code}) after {seconds:.1f} s", **fields)
    return _(
        "job {verdict} (exit {code}) after {seconds:.1f} s; {category}: {title}",
        category=root.category,
        title=root.title,
        **fields,
    )


def final_report(
    report_dir: Path,
    end: Ending,
    record: JobRecord,
    hang: HangReport | None,
    system: SystemInfo | None,
    target_pid: int,
    artifacts: dict[str, str],
    gaps: tuple[ProbeError, ...] = (),
    live: Bundle | None = None,
) -> Report:
    """Diagnose the whole run and write the report directory. A job that hung keeps the
    evidence of its last hang; one the user interrupted before that, the `live` capture taken
    then (where every process was); one that failed gets the kernel log of its lifetime.
    `gaps` is what the sampler could not observe (a wedged NVML), stated in the report."""
    captured = hang.bundle if hang is not None else live
    if captured is not None:
        kernel_log = captured.job.kernel_log if captured.job else ()
        known = {(e.probe, e.pid, e.kind) for e in captured.errors}
        ended = record.model_copy(update={"kernel_log": kernel_log})
        if captured.nodes is not None and captured.job is not None:
            # The whole job's view: every node's ranks, output and stacks, as merged.
            seen = captured.job
            ended = ended.model_copy(
                update={
                    "progress": seen.progress,
                    "output_tail": seen.output_tail,
                    "stopped": seen.stopped or ended.stopped,
                }
            )
        bundle = captured.model_copy(
            update={
                "job": ended,
                "errors": captured.errors
                + tuple(gap for gap in gaps if (gap.probe, gap.pid, gap.kind) not in known),
            }
        )
    else:
        kernel_lines: list[str] = []
        errors: tuple[ProbeError, ...] = gaps
        if end.verdict == "failed":
            kernel_lines, kernel_error = read_kernel_log(since=record.started_at - 60)
            errors += (kernel_error,) if kernel_error else ()
        bundle = Bundle(
            tool_version=__version__,
            created_at=time.time(),
            target_pid=target_pid,
            command=record.command,
            system=system or read_system(None),
            errors=errors,
            job=record.model_copy(update={"kernel_log": tuple(kernel_lines)}),
        )
    return diagnose(
        bundle,
        Context(
            mode=Mode.ENDED,
            verdict=end.verdict,
            exit_code=end.final_code,
            hang=hang.report.hang if hang is not None else None,
            report_dir=report_dir,
            artifacts=artifacts,
        ),
    )
