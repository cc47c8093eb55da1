"""report.json."""

from __future__ import annotations

from hangdoctor.report.model import Report


def render_json(report: Report) -> str:
    """The report as JSON text, valid against report.schema.json."""
    return report.model_dump_json(indent=2) + "\n"
