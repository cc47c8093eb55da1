"""`hangdoctor analyze PATH...`: diagnose a saved capture again, or the logs of a past failure."""

from __future__ import annotations

from pathlib import Path

import click

from hangdoctor.cli.language import language_option
from hangdoctor.cli.output import json_option, prepare_report_dir, report_dir_option, show
from hangdoctor.cli.saved_report import (
    REPORT_FILE,
    SavedReport,
    is_saved_report,
    read_saved_report,
    rediagnose,
)
from hangdoctor.errors import BadInputError, ExitCode
from hangdoctor.evidence.logfiles import LOGS_ONLY_PID, LogFile, read_logs
from hangdoctor.evidence.model import BUNDLE_FORMAT, Bundle
from hangdoctor.evidence.store import BUNDLE_FILE, load_bundle
from hangdoctor.i18n import _
from hangdoctor.pipeline import Context, Mode, diagnose
from hangdoctor.report.model import LogSource, Report


def is_bundle(path: Path) -> bool:
    """Whether `path` is a saved capture (a report directory or an evidence file) rather than a
    log: directories and evidence.json always are; another .json file is when it says so."""
    if path.is_dir() or path.name == BUNDLE_FILE:
        return True
    if path.suffix != ".json":
        return False
    try:
        with path.open("rb") as handle:
            head = handle.read(4096)
    except OSError:
        return False
    return head.lstrip().startswith(b"{") and BUNDLE_FORMAT.split("/")[0].encode() in head


def _exit_code(report: Report) -> int:
    """1 when a problem was diagnosed (or the verdict says the job failed or hung), else 0."""
    problem = any(f.severity.is_problem for f in report.findings)
    return int(
        ExitCode.PROBLEM_FOUND if problem or report.verdict in ("failed", "hung") else ExitCode.OK
    )


def _saved(paths: tuple[Path, ...]) -> SavedReport | None:
    """The one saved report among the paths (a report.json, or a report directory that has
    one), when that is all they are."""
    if len(paths) != 1:
        return None
    path = paths[0]
    if path.is_dir() and (path / REPORT_FILE).is_file():
        path = path / REPORT_FILE
    return read_saved_report(path) if is_saved_report(path) else None


def _sources(files: list[LogFile]) -> list[LogSource]:
    return [
        LogSource(
            path=f.path,
            bytes=f.size_bytes,
            output_lines=len(f.output),
            kernel_lines=len(f.kernel),
            truncated=f.truncated,
        )
        for f in files
    ]


@click.command("analyze")
@click.argument(
    "paths", nargs=-1, required=True, type=click.Path(path_type=Path), metavar="PATH..."
)
@report_dir_option("Also write report.json and report.md (and, for logs, evidence.json) there.")
@json_option
@language_option
def analyze_command(paths: tuple[Path, ...], report_dir: Path | None, as_json: bool) -> int:
    """Diagnose a saved capture again, or the logs of a past failure.

    PATH is a report directory (its evidence.json, or its report.json) written by `dump` or `run`,
    or a plain log
    file: the job's output, torchrun's or NCCL's log, the kernel log (`dmesg`, `journalctl -k`).
    Give as many log files as you have, with or without one capture; kernel lines are told from
    the others by their content. Only the last 20 MB of each file are read, and secrets in them
    are redacted before anything is stored.

    \b
    Verdict for logs alone:
      failed     a problem of severity error or critical was found: what ended the job
      completed  the logs show no failure (the job's own exit code is not known)

    \b
    Exit codes:
      0  nothing wrong found
      1  a problem was diagnosed
      2  unreadable or missing input
    """
    for path in paths:
        if not path.exists():
            raise BadInputError(_("{path} does not exist", path=path))
    if report_dir is not None:
        prepare_report_dir(report_dir)
    if (saved := _saved(paths)) is not None:
        # hangdoctor's own report: its evidence diagnosed again, else the report as saved.
        report = rediagnose(saved, report_dir) if saved.evidence is not None else saved.report
        show(report, as_json, report_dir if saved.evidence is not None else None)
        return _exit_code(report)
    captures = [p for p in paths if is_bundle(p)]
    logs = [p for p in paths if p not in captures]
    if len(captures) > 1:
        raise BadInputError(
            _("analyze reads one capture at a time"),
            help=_(
                "got {paths}; log files may be added to one of them",
                paths=", ".join(map(str, captures)),
            ),
        )
    bundle: Bundle | None = load_bundle(captures[0]) if captures else None
    files: list[LogFile] = []
    if logs:
        bundle, files = read_logs(logs, base=bundle)
    assert bundle is not None  # click requires at least one path
    logs_only = not bundle.snapshots and bundle.target_pid == LOGS_ONLY_PID
    report = diagnose(
        bundle,
        Context(
            mode=Mode.LOGS if logs_only else Mode.LIVE,
            report_dir=report_dir,
            save_evidence=bool(files),
            logs=_sources(files),
        ),
    )
    show(report, as_json, report_dir)
    return _exit_code(report)
