"""hangdoctor's own report.json given to `analyze`: recognised as such, not read as a log.

A report directory keeps the evidence next to its report; re-diagnosing that evidence with the
verdict the run reached (how the job ended) is what `analyze` of the report means. Without the
evidence, the saved report itself is what there is to show."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from hangdoctor.errors import BadInputError
from hangdoctor.evidence.model import Bundle
from hangdoctor.evidence.store import BUNDLE_FILE, load_bundle
from hangdoctor.i18n import _
from hangdoctor.pipeline import Context, Mode, diagnose
from hangdoctor.report.model import Report

REPORT_FILE = "report.json"
_HEAD = 4096


@dataclass(frozen=True)
class SavedReport:
    """A report written by `dump` or `run`, and the evidence beside it if any."""

    path: Path
    report: Report
    evidence: Path | None


def is_saved_report(path: Path) -> bool:
    """Whether `path` is a report.json of hangdoctor's (by name, or by its first fields)."""
    if path.is_dir() or path.suffix != ".json":
        return False
    if path.name == REPORT_FILE:
        return True
    try:
        with path.open("rb") as handle:
            head = handle.read(_HEAD)
    except OSError:
        return False
    return head.lstrip().startswith(b"{") and b'"verdict"' in head and b'"findings"' in head


def read_saved_report(path: Path) -> SavedReport:
    """The saved report, with a one-line error when it is not one."""
    try:
        report = Report.model_validate(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, ValidationError) as error:
        raise BadInputError(
            _("{path} is not a report hangdoctor can read", path=path),
            help=_(
                "give the report directory, its evidence.json, or a log file ({error_type})",
                error_type=type(error).__name__,
            ),
        ) from error
    evidence = path.parent / BUNDLE_FILE
    return SavedReport(path=path, report=report, evidence=evidence if evidence.is_file() else None)


def rediagnose(saved: SavedReport, report_dir: Path | None, bundle: Bundle | None = None) -> Report:
    """The saved evidence (`bundle`, else read from beside the report) diagnosed again; a run
    that ended keeps how it ended."""
    if bundle is None:
        assert saved.evidence is not None
        bundle = load_bundle(saved.evidence)
    old = saved.report
    ended = (bundle.job is not None and not bundle.snapshots) or old.verdict in (
        "failed",
        "completed",
        "interrupted",
    )
    context = (
        Context(
            mode=Mode.ENDED,
            verdict=old.verdict,
            exit_code=old.exit_code,
            hang=old.hang,
            report_dir=report_dir,
            save_evidence=False,
        )
        if ended
        else Context(mode=Mode.LIVE, report_dir=report_dir, save_evidence=False)
    )
    return diagnose(bundle, context)
