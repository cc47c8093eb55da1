"""Recall (and precision) of `hangdoctor lint` on the study's cases: code taken from public bug
reports and fixing commits, textbook variants, and the fixed versions (tests/lint/recall/).

    python benchmarks/lint_study.py [--cases] [--json FILE]

Prints one Markdown table, a row per rule: positives found out of positives (real ones from
bug reports, textbook variants), and precision on the study set (findings on the lines the
cases mark, over all findings in the cases, fixed versions included). `--cases` adds one row
per case. The corpus precision of benchmarks/LINT_STUDY.md comes from the reviewed corpus run,
not from here.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.lint.recall.study import Outcome, run_all  # noqa: E402


def _ratio(found: int, total: int) -> str:
    return f"{found}/{total} ({found / total:.2f})" if total else "-"


def summarise(outcomes: list[Outcome]) -> dict[str, dict[str, int]]:
    """Per rule: real/textbook positives and how many were found, true and false findings."""
    table: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for outcome in outcomes:
        case = outcome.case
        row = table[case.rule]
        if case.kind != "fixed":
            row[case.kind] += 1
            row[f"{case.kind}_found"] += int(outcome.found)
        row["true"] += len(outcome.hits)
        for finding in outcome.extra:
            table[finding.rule_id]["false"] += 1
    return {rule: dict(row) for rule, row in sorted(table.items())}


def render(summary: dict[str, dict[str, int]]) -> str:
    lines = [
        "| rule | real: found/positives | textbook: found/variants | all | study precision |",
        "|---|---:|---:|---:|---:|",
    ]
    totals: dict[str, int] = defaultdict(int)
    for rule, row in summary.items():
        for key, value in row.items():
            totals[key] += value
        found = row.get("real_found", 0) + row.get("textbook_found", 0)
        total = row.get("real", 0) + row.get("textbook", 0)
        true, false = row.get("true", 0), row.get("false", 0)
        lines.append(
            f"| {rule} | {_ratio(row.get('real_found', 0), row.get('real', 0))} | "
            f"{_ratio(row.get('textbook_found', 0), row.get('textbook', 0))} | "
            f"{_ratio(found, total)} | {_ratio(true, true + false)} |"
        )
    found = totals["real_found"] + totals["textbook_found"]
    lines.append(
        f"| **all** | {_ratio(totals['real_found'], totals['real'])} | "
        f"{_ratio(totals['textbook_found'], totals['textbook'])} | "
        f"{_ratio(found, totals['real'] + totals['textbook'])} | "
        f"{_ratio(totals['true'], totals['true'] + totals['false'])} |"
    )
    return "\n".join(lines) + "\n"


def render_cases(outcomes: list[Outcome]) -> str:
    lines = ["| case | kind | result | other findings |", "|---|---|---|---|"]
    for outcome in outcomes:
        case = outcome.case
        if case.kind == "fixed":
            result = "quiet" if not outcome.extra else "REPORTED"
        else:
            result = "found" if outcome.found else "missed"
        extra = ", ".join(f"{f.rule_id} line {f.line}" for f in outcome.extra)
        source = f"[{case.name}]({case.source})" if case.source else case.name
        lines.append(f"| {source} | {case.kind} | {result} | {extra} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", action="store_true", help="also list every case")
    parser.add_argument("--json", type=Path, help="write the per-case outcome here")
    options = parser.parse_args(argv)
    outcomes = run_all()
    print(render(summarise(outcomes)))
    if options.cases:
        print(render_cases(outcomes))
    if options.json:
        options.json.write_text(
            json.dumps(
                [
                    {
                        "case": o.case.name,
                        "kind": o.case.kind,
                        "source": o.case.source,
                        "found": o.found,
                        "extra": [f"{f.rule_id}:{f.line}" for f in o.extra],
                    }
                    for o in outcomes
                ],
                indent=1,
            )
            + "\n"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
