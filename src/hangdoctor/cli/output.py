"""Writing a report directory and printing the summary: shared by dump and analyze."""

from __future__ import annotations

import sys
from pathlib import Path

from rich.console import Console

from hangdoctor.evidence.model import Bundle
from hangdoctor.evidence.store import BUNDLE_FILE, save_bundle
from hangdoctor.report.model import Report
from hangdoctor.report.render_json import render_json
from hangdoctor.report.render_markdown import render_markdown
from hangdoctor.report.render_terminal import render_terminal

ARTIFACTS = {"evidence": BUNDLE_FILE, "markdown": "report.md"}


def write_report_dir(directory: Path, report: Report, bundle: Bundle | None) -> Report:
    """Write report.json, report.md and (when given) the evidence bundle into `directory`."""
    directory.mkdir(parents=True, exist_ok=True)
    artifacts = {"markdown": "report.md"}
    if bundle is not None:
        save_bundle(bundle, directory)
        artifacts["evidence"] = BUNDLE_FILE
    report = report.model_copy(update={"artifacts": {**report.artifacts, **artifacts}})
    (directory / "report.md").write_text(render_markdown(report), encoding="utf-8")
    (directory / "report.json").write_text(render_json(report), encoding="utf-8")
    return report


def show(report: Report, as_json: bool, report_dir: Path | None) -> None:
    """Print the JSON report on stdout, or the terminal summary."""
    if as_json:
        sys.stdout.write(render_json(report))
        return
    console = Console(highlight=False, soft_wrap=False)
    render_terminal(report, console, str(report_dir) if report_dir else None)
