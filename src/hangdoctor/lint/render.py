"""Turn findings into text, JSON or SARIF 2.1.0. Renderers only format; they decide nothing.

Sentences (messages, fixes, the rules' help) are in the language in force, as the findings
were made; ids, names, categories and every JSON/SARIF key stay English, and both formats say
which language their sentences are in (`language`)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from hangdoctor import __version__
from hangdoctor.i18n import _, active_language
from hangdoctor.lint.model import LintFinding
from hangdoctor.lint.rules import RULES_BY_ID
from hangdoctor.severity import Severity

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
_LEVEL = {
    Severity.CRITICAL: "error",
    Severity.ERROR: "error",
    Severity.WARNING: "warning",
    Severity.INFO: "note",
}


def render_text(findings: list[LintFinding]) -> str:
    """One line per finding: `path:line:col ID message (fix: ...)`."""
    return "".join(
        _(
            "{path}:{line}:{col} {id} {message} (fix: {fix})",
            path=f.path,
            line=f.line,
            col=f.col,
            id=f.rule_id,
            message=f.message,
            fix=f.fix,
        )
        + "\n"
        for f in findings
    )


def summary(findings: list[LintFinding], files: int) -> str:
    """The closing line of the text format (written to stderr)."""
    if not findings:
        return _("hangdoctor lint: {files} file(s) checked, nothing found", files=files)
    counts = Counter(f.rule_id for f in findings)
    by_id = ", ".join(f"{rule_id} x{n}" for rule_id, n in sorted(counts.items()))
    return _(
        "hangdoctor lint: {count} finding(s) in {files} file(s) checked ({by_id})",
        count=len(findings),
        files=files,
        by_id=by_id,
    )


def to_json(findings: list[LintFinding], files: int) -> dict[str, Any]:
    return {
        "tool": "hangdoctor lint",
        "version": __version__,
        "files_checked": files,
        "language": active_language(),
        "findings": [
            {
                "path": f.path,
                "line": f.line,
                "column": f.col,
                "id": f.rule_id,
                "name": f.name,
                "category": f.category,
                "severity": f.severity.value,
                "message": f.message,
                "fix": f.fix,
            }
            for f in findings
        ],
    }


def _uri(path: str) -> str:
    candidate = Path(path)
    return candidate.as_uri() if candidate.is_absolute() else candidate.as_posix()


def to_sarif(findings: list[LintFinding]) -> dict[str, Any]:
    """A SARIF 2.1.0 log with one run: every rule in tool.driver.rules (so code-scanning tools
    can show the help of a rule with no results yet), one result per finding."""
    rule_ids = sorted(RULES_BY_ID)
    position = {rule_id: n for n, rule_id in enumerate(rule_ids)}
    rules = []
    for rule_id in rule_ids:
        rule = RULES_BY_ID[rule_id]
        message, why, fix = _(rule.message), _(rule.why) if rule.why else "", _(rule.fix)
        help_text = _("{why}\n\nFix: {fix}", why=why, fix=fix) if why else _("Fix: {fix}", fix=fix)
        rules.append(
            {
                "id": rule.id,
                "name": rule.name,
                "shortDescription": {"text": message},
                "fullDescription": {"text": why or message},
                "help": {"text": help_text},
                "defaultConfiguration": {"level": _LEVEL[rule.severity]},
                "properties": {"category": rule.category.value, "tags": [rule.category.value]},
            }
        )
    results = [
        {
            "ruleId": f.rule_id,
            "ruleIndex": position[f.rule_id],
            "level": _LEVEL[f.severity],
            "message": {"text": _("{message} (fix: {fix})", message=f.message, fix=f.fix)},
            "locations": [
                {
                    "physicalLocation": {
                        "artifactLocation": {"uri": _uri(f.path)},
                        "region": {"startLine": f.line, "startColumn": f.col},
                    }
                }
            ],
        }
        for f in findings
    ]
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                # No informationUri/helpUri: the project has no published URL yet; the help text
                # carries the rule's documentation (docs/lint.md has the same text).
                "tool": {"driver": {"name": "hangdoctor", "version": __version__, "rules": rules}},
                "columnKind": "unicodeCodePoints",
                # The language of the messages and the rules' help (SARIF: RFC 5646 tag).
                "language": active_language(),
                "results": results,
            }
        ],
    }


def render(findings: list[LintFinding], files: int, fmt: str) -> str:
    if fmt == "json":
        return json.dumps(to_json(findings, files), indent=2) + "\n"
    if fmt == "sarif":
        return json.dumps(to_sarif(findings), indent=2) + "\n"
    return render_text(findings)
