"""report.md: the same content as the terminal summary, plus every process and stack, for
pasting into an issue or a chat."""

from __future__ import annotations

from hangdoctor.report.model import Report
from hangdoctor.rules.finding import Culprit, Finding


def culprit_line(culprit: Culprit | None) -> str:
    """`rank 1, pid 42, thread MainThread (tid 42), train.py:41 in main`."""
    if culprit is None:
        return "unknown"
    parts = []
    if culprit.rank is not None:
        parts.append(f"rank {culprit.rank}")
    if culprit.role and culprit.role != "rank":
        parts.append(culprit.role.replace("_", " "))
    if culprit.pid is not None:
        parts.append(f"pid {culprit.pid}")
    if culprit.thread:
        parts.append(f"thread {culprit.thread}")
    if culprit.location:
        loc = culprit.location
        parts.append(f"{loc.file}:{loc.line} in {loc.function}")
    return ", ".join(parts)


def _finding(finding: Finding, heading: str) -> list[str]:
    lines = [
        f"## {heading}: {finding.title}",
        "",
        f"- **Category:** `{finding.category}` ({finding.id}, {finding.severity.value}, "
        f"confidence {finding.confidence:.0%})",
        f"- **Culprit:** {culprit_line(finding.culprit)}",
    ]
    if finding.culprit and finding.culprit.location and finding.culprit.location.code:
        lines.append(f"- **Line:** `{finding.culprit.location.code}`")
    lines += [f"- **Also involved:** {culprit_line(c)}" for c in finding.related]
    if finding.explanation:
        lines += ["", finding.explanation]
    lines += ["", "**Evidence**", ""] + [f"- {e}" for e in finding.evidence]
    lines += ["", "**What to do**", ""] + [f"{i}. {f}" for i, f in enumerate(finding.fixes, 1)]
    return [*lines, ""]


def render_markdown(report: Report) -> str:
    """The whole report as Markdown."""
    lines = ["# hangdoctor report", ""]
    lines.append(f"- **Verdict:** {report.verdict}")
    if report.hang:
        phase = ", while compiling (its compile budget ran out)" \
            if report.hang.phase == "compile" else ""
        lines.append(f"- **Hang kind:** {report.hang.kind}{phase}")
    if report.command:
        lines.append(f"- **Command:** `{' '.join(report.command)}`")
    if report.exit_code is not None:
        lines.append(f"- **Exit code:** {report.exit_code}")
    logs = report.capture.logs
    for log in logs:
        tail = ", last 20 MB only" if log.truncated else ""
        lines.append(f"- **Log:** `{log.path}` ({log.output_lines} output lines, "
                     f"{log.kernel_lines} kernel lines{tail})")
    lines.append("")
    if not report.findings:
        lines += ["No problem found in "
                  + ("these logs." if logs and not report.processes else "this capture."), ""]
    for index, finding in enumerate(report.findings):
        lines += _finding(finding, "Root cause" if index == 0 else f"Also found ({index + 1})")
    errors = report.capture.errors
    if errors:
        lines += ["## Capture problems", ""]
        lines += [f"- {e.probe} (pid {e.pid}): {e.kind}: {e.message}" for e in errors]
        lines.append("")
    if logs and not report.processes:
        return "\n".join(lines)
    lines += ["## Processes", "",
              "| pid | ppid | role | rank | state | CPU % | RSS MiB | threads |",
              "|---|---|---|---|---|---|---|---|"]
    for p in report.processes:
        rss = f"{p.rss_bytes / 2**20:.0f}" if p.rss_bytes else ""
        cpu = p.cpu_percent
        lines.append(
            f"| {p.pid} | {p.ppid or ''} | {p.role.value} | "
            f"{'' if p.rank is None else p.rank} | {p.state} | "
            f"{'' if cpu is None else cpu} | {rss} | {len(p.threads)} |"
        )
    lines.append("")
    for p in report.processes:
        lines += [f"### pid {p.pid} ({p.role.value}): `{' '.join(p.command)}`", ""]
        for t in p.threads:
            gil = ", holds the GIL" if t.owns_gil else ""
            lines.append(f"- **{t.name}** (tid {t.tid}): {t.waiting_on}{gil}")
            lines += [
                f"  - `{f.file}:{f.line}` in `{f.function}`" + (f": `{f.code}`" if f.code else "")
                for f in t.stack
            ]
        lines.append("")
    return "\n".join(lines)
