"""`hangdoctor analyze PATH`: diagnose a saved evidence bundle again."""

from __future__ import annotations

from pathlib import Path

import click

from hangdoctor.cli.output import show, write_report_dir
from hangdoctor.errors import BadInputError, ExitCode
from hangdoctor.evidence.store import load_bundle
from hangdoctor.report.model import build_report
from hangdoctor.rules.engine import diagnose


@click.command("analyze")
@click.argument("path", type=click.Path(path_type=Path))
@click.option("--report-dir", type=click.Path(file_okay=False, path_type=Path),
              help="Also write report.json and report.md there.")
@click.option("--json", "as_json", is_flag=True, help="Print the JSON report instead of the "
              "summary.")
def analyze_command(path: Path, report_dir: Path | None, as_json: bool) -> int:
    """Re-run the rules on a saved evidence bundle (a report directory or its evidence.json).

    Exit codes: 0 nothing wrong found, 1 a problem was diagnosed, 2 unreadable input.
    """
    if not path.exists():
        raise BadInputError(f"{path} does not exist")
    bundle = load_bundle(path)
    report = build_report(bundle, diagnose(bundle))
    if report_dir is not None:
        report = write_report_dir(report_dir, report, None)
    show(report, as_json, report_dir)
    return int(ExitCode.PROBLEM_FOUND if report.verdict == "hung" else ExitCode.OK)
