"""The terminal summary: what hung, where, why, and what to do, in one screen."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.panel import Panel
from rich.text import Text

from hangdoctor.report.model import Report
from hangdoctor.report.render_markdown import (
    culprit_line,
    finding_label,
    has_root_cause,
    no_python_line,
)
from hangdoctor.report.rule_docs import rule_doc

_VERDICT_STYLE = {
    "hung": "bold red",
    "failed": "bold red",
    "running": "bold green",
    "completed": "bold green",
    "interrupted": "bold yellow",
}


_ROLE_NAMES = {
    "main": "main process",
    "dataloader_worker": "DataLoader worker",
    "child": "child process",
    "other": "helper process",
}


def _count(number: int, role: str) -> str:
    name = _ROLE_NAMES.get(role, role)
    return f"{number} {name}{'' if number == 1 else 'es' if name.endswith('ss') else 's'}"


def render_terminal(
    report: Report, console: Console, report_dir: str | None = None, max_findings: int = 3
) -> None:
    """Print the summary to `console`: the verdict, then up to `max_findings` findings."""
    verdict = Text(report.verdict.upper(), style=_VERDICT_STYLE.get(report.verdict, "bold"))
    header = Text.assemble("hangdoctor: ", verdict)
    if report.hang:
        phase = ", while compiling" if report.hang.phase == "compile" else ""
        header.append(f" ({report.hang.kind}{phase})")
    roles: dict[str, int] = {}
    for process in report.processes:
        roles[process.role.value] = roles.get(process.role.value, 0) + 1
    header.append("  " + ", ".join(_count(n, r) for r, n in roles.items()))
    logs = report.capture.logs
    if logs:
        header.append(f"{', ' if roles else ''}{len(logs)} log file{'s' * (len(logs) > 1)}")
    console.print(header)
    not_python = no_python_line(report)
    if not_python:
        console.print(escape(not_python), style="yellow")
    if not report.findings:
        console.print(
            "No problem found in " + ("these logs." if logs and not roles else "this capture.")
        )
    for index, finding in enumerate(report.findings[:max_findings]):
        body = Text()
        body.append(f"{finding.category}", style="bold")
        body.append(
            f"  {finding.id}  {finding.severity.value}, confidence {finding.confidence:.0%}\n"
        )
        body.append("Culprit: ", style="bold")
        body.append(culprit_line(finding.culprit) + "\n")
        location = finding.culprit.location if finding.culprit else None
        if location and location.code:
            body.append(f"    {location.code}\n", style="cyan")
        if finding.explanation and index == 0:
            body.append(finding.explanation + "\n")
        body.append("Evidence:\n", style="bold")
        for line in finding.evidence:
            body.append(f"  - {line}\n")
        body.append("What to do:\n", style="bold green")
        for number, fix in enumerate(finding.fixes, 1):
            body.append(f"  {number}. {fix}\n")
        doc = rule_doc(finding.id)
        if doc:
            body.append(f"About {finding.id}: {doc}\n", style="dim")
        label = finding_label(report, index)
        root = index == 0 and has_root_cause(report)
        console.print(
            Panel(
                body,
                title=escape(f"{label}: {finding.title}"),
                title_align="left",
                border_style="red" if root else "yellow",
            )
        )
    if len(report.findings) > max_findings:
        console.print(
            f"... and {len(report.findings) - max_findings} more finding(s) in the report."
        )
    for error in report.capture.errors:
        if error.kind != "not_python":
            console.print(
                f"[yellow]capture: {escape(error.probe)} pid {error.pid}: "
                f"{escape(error.message)}[/yellow]"
            )
    if report_dir:
        console.print(f"Report: {escape(report_dir)}/report.md (and report.json, evidence.json)")
