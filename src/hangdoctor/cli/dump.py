"""`hangdoctor dump PID`: capture and diagnose a live process tree once."""

from __future__ import annotations

import time
from pathlib import Path

import click
import psutil

from hangdoctor.capture.job_scope import capture_job
from hangdoctor.capture.tree import CaptureOptions
from hangdoctor.cli.language import language_option
from hangdoctor.cli.output import (
    default_report_dir,
    json_option,
    prepare_report_dir,
    report_dir_option,
    show,
)
from hangdoctor.errors import PTRACE_HELP, PY_SPY_HELP, ExitCode, NoSuchProcessError
from hangdoctor.evidence.model import Bundle
from hangdoctor.i18n import _
from hangdoctor.pipeline import Context, diagnose
from hangdoctor.probes.nccl_ras import with_nccl_ras
from hangdoctor.probes.pystacks import StackOptions


def capture_exit_code(bundle: Bundle, hung: bool) -> tuple[ExitCode, str | None, str | None]:
    """(exit code, message, help) for a finished capture: incomplete evidence outranks a
    diagnosis, because the diagnosis may then be wrong."""
    errors = bundle.errors
    if any(e.kind == "exited" and e.pid == bundle.target_pid for e in errors):
        return (
            ExitCode.NO_SUCH_PROCESS,
            _(
                "process {pid} exited during the capture; partial evidence was reported",
                pid=bundle.target_pid,
            ),
            None,
        )
    denied = [e for e in errors if e.probe == "py-spy" and e.kind == "permission"]
    if denied:
        pids = ", ".join(str(e.pid) for e in denied)
        return (
            ExitCode.PERMISSION,
            _(
                "not allowed to read the Python stacks of pid {pids}; /proc evidence was reported",
                pids=pids,
            ),
            _(PTRACE_HELP),
        )
    broken = [
        e for e in errors if e.probe == "py-spy" and e.kind in ("missing_tool", "timeout", "failed")
    ]
    if broken:
        first = broken[0]
        help = _(PY_SPY_HELP) if first.kind == "missing_tool" else None
        return (
            ExitCode.STACKS_UNAVAILABLE,
            _(
                "Python stacks unavailable ({message}); /proc evidence was reported",
                message=first.message,
            ),
            help,
        )
    return (ExitCode.PROBLEM_FOUND if hung else ExitCode.OK), None, None


@click.command("dump")
@click.argument("pid", type=int)
@report_dir_option(
    "Where to write report.json, report.md and evidence.json "
    "[default: ./hangdoctor-reports/dump-PID-TIME]."
)
@json_option
@click.option("--native", is_flag=True, help="Also read native (C/C++) frames; about 5x slower.")
@click.option(
    "--locals/--no-locals",
    "with_locals",
    default=True,
    show_default=True,
    help="Read local variables (secrets redacted); they identify locks in deadlocks.",
)
@click.option(
    "--samples",
    type=click.IntRange(1, 20),
    default=2,
    show_default=True,
    help="Snapshots to take; two or more tell a busy loop from a passing moment.",
)
@click.option(
    "--interval",
    type=click.FloatRange(0.05, 10.0),
    default=0.5,
    show_default=True,
    help="Seconds between snapshots.",
)
@click.option(
    "--whole-job/--tree-only",
    default=True,
    show_default=True,
    help="For one rank of a distributed job: also capture its launcher and the "
    "other ranks on this host, or only PID's own tree (the report then says "
    "what it left out).",
)
@click.option(
    "--timeout",
    "probe_timeout",
    type=click.FloatRange(0.5, 300.0),
    default=10.0,
    show_default=True,
    help="Time limit for each stack dump, in seconds.",
)
@language_option
def dump_command(
    pid: int,
    report_dir: Path | None,
    as_json: bool,
    native: bool,
    with_locals: bool,
    samples: int,
    interval: float,
    whole_job: bool,
    probe_timeout: float,
) -> int:
    """Capture the live process tree rooted at PID once, diagnose it, and report. PID may be
    one rank of a distributed job: its launcher and other ranks on this host are captured too.

    Exit codes: 0 nothing wrong found, 1 a problem was diagnosed, 2 bad usage, 3 no such
    process (or it exited during the capture), 4 not permitted to read stacks, 5 py-spy
    missing or failing. With 3 (after capture started), 4 and 5 the report holds what could
    be read.
    """
    if pid <= 0 or not psutil.pid_exists(pid):  # before any folder is made for it
        raise NoSuchProcessError(_("no process with PID {pid}", pid=pid))
    if report_dir is not None:  # named by the user: refused at once if it cannot be written
        prepare_report_dir(report_dir)
        directory = report_dir
    else:
        directory = default_report_dir(
            Path("hangdoctor-reports") / (f"dump-{pid}-{time.strftime('%Y%m%d-%H%M%S')}")
        )
    options = CaptureOptions(
        samples=samples,
        interval_s=interval,
        stacks=StackOptions(native=native, locals=with_locals, timeout_s=probe_timeout),
    )
    captured = capture_job(pid, options, whole_job)
    if captured.note:
        click.echo(f"hangdoctor: {captured.note}", err=True)
    bundle = with_nccl_ras(captured.bundle)
    report = diagnose(bundle, Context(report_dir=directory))
    show(report, as_json, directory)
    code, message, help = capture_exit_code(bundle, report.verdict == "hung")
    if message:
        click.echo(_("hangdoctor: warning: {message}", message=message), err=True)
        if help:
            click.echo(_("hangdoctor: hint: {help}", help=help), err=True)
    return int(code)
