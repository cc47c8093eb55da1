"""The report directory: report.json, report.md, report.html and (when given) the evidence
bundle."""

from __future__ import annotations

import sys
from pathlib import Path

from hangdoctor.evidence.model import Bundle
from hangdoctor.evidence.store import BUNDLE_FILE, save_bundle
from hangdoctor.i18n import _
from hangdoctor.private_files import make_dir, write_text
from hangdoctor.report.model import Report
from hangdoctor.report.render_json import render_json
from hangdoctor.report.render_markdown import render_markdown

#: report.html, beside report.json.
HTML_FILE = "report.html"


def write_report_dir(
    directory: Path, report: Report, bundle: Bundle | None, page_bundle: Bundle | None = None
) -> Report:
    """Write the report files into `directory`, the evidence too when `bundle` is given;
    returns the report naming them as artifacts. report.html draws its timelines from
    `bundle`, else from `page_bundle` (evidence that is not to be saved again)."""
    make_dir(directory)
    artifacts = {"markdown": "report.md", "html": HTML_FILE}
    if bundle is not None:
        save_bundle(bundle, directory)
        artifacts["evidence"] = BUNDLE_FILE
    report = report.model_copy(update={"artifacts": {**report.artifacts, **artifacts}})
    if write_readable(directory, report, bundle or page_bundle) is None:
        kept = {k: v for k, v in report.artifacts.items() if k != "html"}
        report = report.model_copy(update={"artifacts": kept})
    write_text(directory / "report.json", render_json(report))
    return report


def write_readable(directory: Path, report: Report, bundle: Bundle | None) -> Path | None:
    """report.md and report.html, the files a person reads; returns report.html's path, or
    None when the page could not be made (report.json and report.md are never lost to it)."""
    write_text(directory / "report.md", render_markdown(report))
    # Imported here: the templates and charts cost a capture's start nothing.
    from hangdoctor.report.render_html import render_html

    try:
        page = render_html(report, bundle)
    except Exception as error:  # a bug in the page must not cost the capture
        print(
            _("hangdoctor: warning: report.html not written ({error})", error=repr(error)),
            file=sys.stderr,
        )
        return None
    path = directory / HTML_FILE
    write_text(path, page)
    return path
