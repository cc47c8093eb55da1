"""The report directory: report.json, report.md and (when given) the evidence bundle."""

from __future__ import annotations

from pathlib import Path

from hangdoctor.evidence.model import Bundle
from hangdoctor.evidence.store import BUNDLE_FILE, save_bundle
from hangdoctor.private_files import make_dir, write_text
from hangdoctor.report.model import Report
from hangdoctor.report.render_json import render_json
from hangdoctor.report.render_markdown import render_markdown


def write_report_dir(directory: Path, report: Report, bundle: Bundle | None) -> Report:
    """Write the report files into `directory`; returns the report naming them as artifacts."""
    make_dir(directory)
    artifacts = {"markdown": "report.md"}
    if bundle is not None:
        save_bundle(bundle, directory)
        artifacts["evidence"] = BUNDLE_FILE
    report = report.model_copy(update={"artifacts": {**report.artifacts, **artifacts}})
    write_text(directory / "report.md", render_markdown(report))
    write_text(directory / "report.json", render_json(report))
    return report
