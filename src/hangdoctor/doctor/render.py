"""Format the doctor's results: a rich table for people, stable JSON for programs
(format `hangdoctor-doctor/1`, documented in docs/doctor.md)."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from hangdoctor import __version__
from hangdoctor.doctor.facts import Facts
from hangdoctor.doctor.result import CheckResult, Status, exit_code, overall
from hangdoctor.i18n import N_, _

FORMAT = "hangdoctor-doctor/1"
_STYLE = {"ok": "green", "info": "cyan", "warn": "yellow", "problem": "bold red", "skipped": "dim"}
#: How the table names each status (the JSON keeps the ids).
_LABEL: dict[Status, str] = {
    "ok": N_("ok"),
    "info": N_("info"),
    "warn": N_("warn"),
    "problem": N_("problem"),
    "skipped": N_("skipped"),
}


def _status(status: Status) -> str:
    """The status, coloured, in the report's language."""
    return f"[{_STYLE[status]}]{_(_LABEL[status])}[/]"


def to_json_data(
    facts: Facts, results: list[CheckResult], duration_s: float, *, strict: bool = False
) -> dict[str, Any]:
    """The JSON document: verdict, counts, checks, self-tests and the raw facts."""
    counts = Counter(r.status for r in results)
    return {
        "format": FORMAT,
        "hangdoctor_version": __version__,
        "hostname": facts.hostname,
        "duration_s": round(duration_s, 3),
        "status": overall(results),
        "exit_code": int(exit_code(results, strict=strict)),
        "counts": {s: counts.get(s, 0) for s in ("ok", "info", "warn", "problem", "skipped")},
        "checks": [r.model_dump(mode="json") for r in results],
        "selftests": (
            [t.model_dump(mode="json") for t in facts.selftests]
            if facts.selftests is not None
            else None
        ),
        "facts": facts.model_dump(mode="json", exclude={"selftests"}),
    }


def render_json(
    facts: Facts, results: list[CheckResult], duration_s: float, *, strict: bool = False
) -> str:
    """The JSON document as text."""
    return json.dumps(to_json_data(facts, results, duration_s, strict=strict), indent=2) + "\n"


def render_terminal(
    facts: Facts,
    results: list[CheckResult],
    duration_s: float,
    console: Console,
    verbose: bool = False,
) -> None:
    """A table of every check, then why and how to fix each warning and problem."""
    table = Table(
        title=f"hangdoctor doctor: {escape(facts.hostname)}",
        title_justify="left",
        show_lines=False,
        expand=False,
    )
    table.add_column(_("status"), no_wrap=True)
    table.add_column(_("id"), no_wrap=True)
    table.add_column(_("check"))
    table.add_column(_("found"))
    table.add_column(_("wanted"))
    for r in results:
        if r.status == "ok" and not verbose and r.area == "gpu" and r.id != "DR500":
            continue
        table.add_row(_status(r.status), r.id, escape(r.title), escape(r.found), escape(r.wanted))
    console.print(table)
    actionable = [r for r in results if r.status in ("warn", "problem")]
    for r in actionable:
        console.print(f"\n{_status(r.status)} {r.id} {escape(r.title)}")
        if r.why:
            console.print("  " + _("why: {why}", why=escape(r.why)))
        if r.fix:
            console.print("  " + _("fix: {fix}", fix=escape(r.fix)))
        if r.source:
            console.print("  " + _("source: {source}", source=escape(r.source)))
    counts = Counter(r.status for r in results)
    verdict = overall(results)
    seconds = f"{duration_s:.1f}"
    console.print(
        "\n"
        + _(
            "{verdict}: {problems} problem(s), {warnings} warning(s), {ok} ok, {info} info, "
            "{skipped} skipped ({seconds} s)",
            verdict=_status(verdict),
            problems=counts.get("problem", 0),
            warnings=counts.get("warn", 0),
            ok=counts.get("ok", 0),
            info=counts.get("info", 0),
            skipped=counts.get("skipped", 0),
            seconds=seconds,
        )
    )
