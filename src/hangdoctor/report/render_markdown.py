"""report.md: the same content as the terminal summary, plus every process and stack, for
pasting into an issue or a chat."""

from __future__ import annotations

import time

from hangdoctor.i18n import _, _n
from hangdoctor.report.model import Report
from hangdoctor.report.rule_docs import rule_doc
from hangdoctor.rules.finding import Culprit, Finding


def culprit_line(culprit: Culprit | None) -> str:
    """`rank 1, pid 42, thread MainThread (tid 42), train.py:41 in main`."""
    if culprit is None:
        return "unknown"
    parts = []
    if culprit.node is not None:
        host = f" ({culprit.host})" if culprit.host and culprit.host != culprit.node else ""
        parts.append(f"node {culprit.node}{host}")
    elif culprit.host is not None:
        parts.append(f"host {culprit.host}")
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


#: Verdicts in which the first finding is what went wrong. In the others (a job that runs,
#: completed, or was interrupted) warnings are what was noticed: no problem to have a cause.
PROBLEM_VERDICTS = frozenset({"hung", "failed"})


def has_root_cause(report: Report) -> bool:
    """Whether the first finding is a root cause: the job hung or failed, or an error-level
    problem was found (a stuck job the user interrupted)."""
    return report.verdict in PROBLEM_VERDICTS or any(f.severity.is_problem for f in report.findings)


def finding_label(report: Report, index: int) -> str:
    """`Root cause` / `Also found` where there is a problem; `Observation` otherwise."""
    if not has_root_cause(report):
        return "Observation"
    return "Root cause" if index == 0 else "Also found"


def no_python_line(report: Report) -> str | None:
    """What to say when the capture holds processes but none is Python: no stacks could be
    read, which is not the same as nothing wrong; then what /proc shows of the first one."""
    if not report.processes or any(p.python for p in report.processes):
        return None
    first = report.processes[0]
    command = " ".join(first.command[:4]) or first.name or "?"
    line = (
        f"No Python process here: pid {first.pid} (`{command}`) is not a Python program, "
        "so there are no Python stacks to read."
    )
    main = next((t for t in first.threads if t.tid == first.pid), None)
    seen = [f"state {first.state}"]
    if main is not None and main.waiting_on:
        seen.append(f"main thread {main.waiting_on}")
    elif main is not None and main.wchan:
        seen.append(f"main thread waits in {main.wchan}")
    if len(report.processes) > 1:
        seen.append(f"{len(report.processes) - 1} more process(es) in its tree")
    return f"{line} /proc shows: {'; '.join(seen)}."


def _rule(rule_id: str) -> str:
    """The rule's id, linked to its documentation page where it has one."""
    doc = rule_doc(rule_id)
    return f"[{rule_id}]({doc})" if doc else rule_id


def _finding(finding: Finding, heading: str) -> list[str]:
    lines = [
        f"## {heading}: {finding.title}",
        "",
        f"- **Category:** `{finding.category}` ({_rule(finding.id)}, "
        f"{finding.severity.value}, confidence {finding.confidence:.0%})",
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


def _wait_for(report: Report) -> list[str]:
    """Who waits for whom, the certain edges and the waits nothing can end."""
    shown = [w for w in report.wait_for if w.certain]
    if not shown:
        return []
    lines = ["## Who waits for whom", ""]
    for w in shown[:40]:
        target = f"pid {w.on_pid} tid {w.on_tid}, which {w.why}" if w.on_pid is not None else w.why
        lines.append(f"- pid {w.pid} tid {w.tid} ({w.waits_in}) waits for {target}")
    if len(shown) > 40:
        lines.append(f"- ... and {len(shown) - 40} more in report.json (`wait_for`)")
    return [*lines, ""]


def _nodes(report: Report) -> list[str]:
    """A job of several nodes: which of them the view holds."""
    nodes = report.nodes
    if nodes is None:
        return []
    lines = ["## Nodes", ""]
    if nodes.partial:
        lines += ["**Partial view:** some nodes of the job are not in it.", ""]
    lines += [f"Met through {nodes.transport}." if nodes.transport else "", ""]
    lines += ["| node | host | ranks | in this report |", "|---|---|---|---|"]
    for node in nodes.nodes:
        if not node.joined:
            state = "no: its hangdoctor never joined"
        elif node.answered:
            state = "yes"
        elif node.silent_s is not None and node.silent_s >= 6:
            state = f"no: silent for {node.silent_s:.0f} s"
        else:
            state = "no: it sent no evidence in time"
        ranks = ", ".join(map(str, node.ranks)) if node.ranks else ""
        here = " (this node)" if node.node == nodes.this_node else ""
        lines.append(f"| {node.node}{here} | {node.host or ''} | {ranks} | {state} |")
    return [*lines, ""]


def _job_phase(report: Report) -> list[str]:
    """The phase the job said it was in at the hang (`hangdoctor.phase`)."""
    phase = report.hang.job_phase if report.hang else None
    return (
        [_("- **Phase:** `{phase}` (the job's own, hangdoctor.phase)", phase=phase)]
        if phase
        else []
    )


def _marks(report: Report) -> list[str]:
    """What the job said along the way: its marks and last heartbeat (`hangdoctor.mark`,
    `hangdoctor.heartbeat`), per process, times in UTC."""
    job = report.capture.job
    statuses = [s for s in job.progress if s.marks or s.heartbeats] if job else []
    if not statuses:
        return []
    lines = [_("## Marks and heartbeats"), ""]
    for status in statuses:
        who = (
            _("pid {pid}", pid=status.pid)
            if status.rank is None
            else _("pid {pid} (rank {rank})", pid=status.pid, rank=status.rank)
        )
        if status.heartbeats and status.last_heartbeat_at is not None:
            step = (
                ""
                if status.heartbeat_step is None
                else _(", step {step}", step=status.heartbeat_step)
            )
            lines.append(
                _n(
                    "- {who}: {count} heartbeat, at {time}{step}",
                    "- {who}: {count} heartbeats, the last at {time}{step}",
                    status.heartbeats,
                    who=who,
                    time=_clock(status.last_heartbeat_at),
                    step=step,
                )
            )
        lines += [f"- {who}: {_clock(m.at)} `{m.text}`" for m in status.marks]
    return [*lines, ""]


def _clock(unix_time: float) -> str:
    """A Unix time as `HH:MM:SS.mmm` UTC: marks are seconds apart, the date is the report's."""
    whole = time.strftime("%H:%M:%S", time.gmtime(unix_time))
    return f"{whole}.{int(unix_time % 1 * 1000):03d}"


def render_markdown(report: Report) -> str:
    """The whole report as Markdown."""
    lines = ["# hangdoctor report", ""]
    lines.append(f"- **Verdict:** {report.verdict}")
    if report.hang:
        phase = (
            ", while compiling (its compile budget ran out)"
            if report.hang.phase == "compile"
            else ""
        )
        lines.append(f"- **Hang kind:** {report.hang.kind}{phase}")
        lines += _job_phase(report)
    if report.command:
        lines.append(f"- **Command:** `{' '.join(report.command)}`")
    if report.exit_code is not None:
        lines.append(f"- **Exit code:** {report.exit_code}")
    logs = report.capture.logs
    for log in logs:
        tail = ", last 20 MB only" if log.truncated else ""
        lines.append(
            f"- **Log:** `{log.path}` ({log.output_lines} output lines, "
            f"{log.kernel_lines} kernel lines{tail})"
        )
    lines.append("")
    not_python = no_python_line(report)
    if not_python:
        lines += [not_python, ""]
    if not report.findings:
        lines += [
            "No problem found in "
            + ("these logs." if logs and not report.processes else "this capture."),
            "",
        ]
    for index, finding in enumerate(report.findings):
        label = finding_label(report, index)
        lines += _finding(finding, f"{label} ({index + 1})" if index else label)
    errors = report.capture.errors
    if errors:
        lines += ["## Capture problems", ""]
        lines += [f"- {e.probe} (pid {e.pid}): {e.kind}: {e.message}" for e in errors]
        lines.append("")
    if logs and not report.processes:
        return "\n".join(lines)
    lines += _wait_for(report)
    lines += _marks(report)
    lines += _nodes(report)
    lines += [
        "## Processes",
        "",
        "| pid | ppid | role | rank | state | CPU % | RSS MiB | threads |",
        "|---|---|---|---|---|---|---|---|",
    ]
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
