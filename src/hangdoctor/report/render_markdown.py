"""report.md: the same content as the terminal summary, plus every process and stack, for
pasting into an issue or a chat."""

from __future__ import annotations

import time

from hangdoctor.analysis.rank_sets import spans_text
from hangdoctor.evidence.model import NodeClass, NodeSeen
from hangdoctor.i18n import N_, _, _n
from hangdoctor.report.model import Report
from hangdoctor.report.render_stack_tree import stack_tree_section
from hangdoctor.report.rule_docs import rule_doc
from hangdoctor.rules.finding import Culprit, Finding


def culprit_line(culprit: Culprit | None) -> str:
    """`rank 1, pid 42, thread MainThread (tid 42), train.py:41 in main`."""
    if culprit is None:
        return _("unknown")
    parts = []
    if culprit.node is not None:
        if culprit.host and culprit.host != culprit.node:
            parts.append(_("node {node} ({host})", node=culprit.node, host=culprit.host))
        else:
            parts.append(_("node {node}", node=culprit.node))
    elif culprit.host is not None:
        parts.append(_("host {host}", host=culprit.host))
    if culprit.rank is not None:
        parts.append(_("rank {rank}", rank=culprit.rank))
    if culprit.role and culprit.role != "rank":
        role = _CULPRIT_ROLES.get(culprit.role)
        parts.append(_(role) if role else culprit.role.replace("_", " "))
    if culprit.pid is not None:
        parts.append(_("pid {pid}", pid=culprit.pid))
    if culprit.thread:
        parts.append(_("thread {thread}", thread=culprit.thread))
    if culprit.location:
        loc = culprit.location
        parts.append(
            _("{file}:{line} in {function}", file=loc.file, line=loc.line, function=loc.function)
        )
    return _(", ").join(parts)


_CULPRIT_ROLES = {
    "launcher": N_("launcher"),
    "main": N_("main"),
    "dataloader_worker": N_("dataloader worker"),
    "child": N_("child"),
    "other": N_("other"),
}
_VERDICTS = {
    "hung": N_("hung"),
    "failed": N_("failed"),
    "completed": N_("completed"),
    "interrupted": N_("interrupted"),
    "running": N_("running"),
}
_SEVERITIES = {
    "critical": N_("critical"),
    "error": N_("error"),
    "warning": N_("warning"),
    "info": N_("info"),
}


def verdict_word(verdict: str) -> str:
    """The verdict (`hung`, `failed`...) in the report's language."""
    return _(_VERDICTS[verdict]) if verdict in _VERDICTS else verdict


def severity_word(severity: str) -> str:
    """A severity (`error`, `warning`...) in the report's language."""
    return _(_SEVERITIES[severity]) if severity in _SEVERITIES else severity


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
        return _("Observation")
    return _("Root cause") if index == 0 else _("Also found")


def no_python_line(report: Report) -> str | None:
    """What to say when the capture holds processes but none is Python: no stacks could be
    read, which is not the same as nothing wrong; then what /proc shows of the first one."""
    if not report.processes or any(p.python for p in report.processes):
        return None
    first = report.processes[0]
    command = " ".join(first.command[:4]) or first.name or "?"
    line = _(
        "No Python process here: pid {pid} (`{command}`) is not a Python program, "
        "so there are no Python stacks to read.",
        pid=first.pid,
        command=command,
    )
    main = next((t for t in first.threads if t.tid == first.pid), None)
    seen = [_("state {state}", state=first.state)]
    if main is not None and main.waiting_on:
        seen.append(_("main thread {waiting_on}", waiting_on=main.waiting_on))
    elif main is not None and main.wchan:
        seen.append(_("main thread waits in {wchan}", wchan=main.wchan))
    if len(report.processes) > 1:
        seen.append(
            _n(
                "{count} more process in its tree",
                "{count} more processes in its tree",
                len(report.processes) - 1,
            )
        )
    return _("{line} /proc shows: {seen}.", line=line, seen=_("; ").join(seen))


def _rule(rule_id: str) -> str:
    """The rule's id, with the command that shows its page where it has one."""
    doc = rule_doc(rule_id)
    return f"{rule_id}: `{doc}`" if doc else rule_id


def _finding(finding: Finding, heading: str) -> list[str]:
    lines = [
        f"## {heading}: {finding.title}",
        "",
        _(
            "- **Category:** `{category}` ({rule}, {severity}, confidence {confidence:.0%})",
            category=finding.category,
            rule=_rule(finding.id),
            severity=severity_word(finding.severity.value),
            confidence=finding.confidence,
        ),
        _("- **Culprit:** {culprit}", culprit=culprit_line(finding.culprit)),
    ]
    if finding.culprit and finding.culprit.location and finding.culprit.location.code:
        lines.append(_("- **Line:** `{code}`", code=finding.culprit.location.code))
    lines += [_("- **Also involved:** {culprit}", culprit=culprit_line(c)) for c in finding.related]
    if finding.explanation:
        lines += ["", finding.explanation]
    lines += ["", _("**Evidence**"), ""] + [f"- {e}" for e in finding.evidence]
    lines += ["", _("**What to do**"), ""]
    lines += [f"{i}. {f}" for i, f in enumerate(finding.fixes, 1)]
    return [*lines, ""]


def _wait_for(report: Report) -> list[str]:
    """Who waits for whom, the certain edges and the waits nothing can end."""
    shown = [w for w in report.wait_for if w.certain]
    if not shown:
        return []
    lines = [_("## Who waits for whom"), ""]
    for w in shown[:40]:
        target = (
            _("pid {pid} tid {tid}, which {why}", pid=w.on_pid, tid=w.on_tid, why=w.why)
            if w.on_pid is not None
            else w.why
        )
        lines.append(
            _(
                "- pid {pid} tid {tid} ({waits_in}) waits for {target}",
                pid=w.pid,
                tid=w.tid,
                waits_in=w.waits_in,
                target=target,
            )
        )
    if len(shown) > 40:
        lines.append(_("- ... and {count} more in report.json (`wait_for`)", count=len(shown) - 40))
    return [*lines, ""]


def _nodes(report: Report) -> list[str]:
    """A job of several nodes: which of them the view holds."""
    nodes = report.nodes
    if nodes is None:
        return []
    lines = [_("## Nodes"), ""]
    if nodes.partial:
        lines += [_("**Partial view:** some nodes of the job are not in it."), ""]
    lines += [_("Met through {transport}.", transport=nodes.transport) if nodes.transport else ""]
    lines += ["", _("| node | host | ranks | in this report |"), "|---|---|---|---|"]
    rows = sorted(
        [(_order(n.node), _node_row(n, nodes.this_node)) for n in nodes.nodes]
        + [((0, c.nodes[0][0], ""), _class_row(c, nodes.this_node)) for c in nodes.classes]
    )
    lines += [row for _order, row in rows]
    if nodes.omitted:
        lines += [
            "",
            _(
                "{count} more nodes answered and hold no culprit: not listed.",
                count=nodes.omitted,
            ),
        ]
    return [*lines, ""]


def _order(node: str) -> tuple[int, int, str]:
    """Numbered nodes first, by number; then named ones (as `nodes.tree.node_order`)."""
    return (0, int(node), "") if node.isdigit() else (1, 0, node)


def _node_state(node: NodeSeen | NodeClass) -> str:
    if not node.joined:
        return _("no: its hangdoctor never joined")
    if node.answered:
        return _("yes")
    if node.silent_s is not None and node.silent_s >= 6:
        return _("no: silent for {seconds:.0f} s", seconds=node.silent_s)
    return _("no: it sent no evidence in time")


def _node_row(node: NodeSeen, this_node: str) -> str:
    ranks = ", ".join(map(str, node.ranks)) if node.ranks else ""
    here = _(" (this node)") if node.node == this_node else ""
    return f"| {node.node}{here} | {node.host or ''} | {ranks} | {_node_state(node)} |"


def _class_row(found: NodeClass, this_node: str) -> str:
    """Alike nodes (`nodes.node_classes`) in one row: their ranges, how many, first and last
    host, their ranks' ranges."""
    here = ""
    if this_node.isdigit() and any(low <= int(this_node) <= high for low, high in found.nodes):
        here = _(" (this node among them)")
    nodes = _n(
        "{nodes} ({count} node alike)",
        "{nodes} ({count} nodes alike)",
        found.count,
        nodes=spans_text(found.nodes),
    )
    hosts = " … ".join(h for h in (found.host, found.last_host) if h)
    return f"| {nodes}{here} | {hosts} | {spans_text(found.ranks)} | {_node_state(found)} |"


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


def _framework_steps(report: Report) -> list[str]:
    """The JAX and TensorFlow steps each process made, by where they were counted, with the
    frameworks it imported: what a JAX or Keras job did before it stopped."""
    job = report.capture.job
    statuses = [s for s in job.progress if s.framework_steps] if job else []
    if not statuses:
        return []
    lines = [_("## Framework steps"), ""]
    for status in statuses:
        steps = ", ".join(f"{where} {count}" for where, count in status.framework_steps.items())
        frameworks = ", ".join(f"{name} {version}" for name, version in status.frameworks.items())
        lines.append(
            _(
                "- pid {pid}: {steps} ({frameworks})",
                pid=status.pid,
                steps=steps,
                frameworks=frameworks,
            )
        )
    return [*lines, ""]


def _clock(unix_time: float) -> str:
    """A Unix time as `HH:MM:SS.mmm` UTC: marks are seconds apart, the date is the report's."""
    whole = time.strftime("%H:%M:%S", time.gmtime(unix_time))
    return f"{whole}.{int(unix_time % 1 * 1000):03d}"


def render_markdown(report: Report) -> str:
    """The whole report as Markdown."""
    lines = _summary(report)
    logs = report.capture.logs
    lines.append("")
    not_python = no_python_line(report)
    if not_python:
        lines += [not_python, ""]
    if not report.findings:
        if logs and not report.processes:
            lines += [_("No problem found in these logs."), ""]
        else:
            lines += [_("No problem found in this capture."), ""]
    for index, finding in enumerate(report.findings):
        label = finding_label(report, index)
        lines += _finding(finding, f"{label} ({index + 1})" if index else label)
    lines += _capture_problems(report)
    if logs and not report.processes:
        return "\n".join(lines)
    lines += _wait_for(report)
    lines += _marks(report)
    lines += _framework_steps(report)
    lines += _nodes(report)
    lines += stack_tree_section(report)
    lines += _processes(report)
    return "\n".join(lines)


def _summary(report: Report) -> list[str]:
    """The verdict, the hang's kind, the command, its exit code and the logs read."""
    lines = [_("# hangdoctor report"), ""]
    lines.append(_("- **Verdict:** {verdict}", verdict=verdict_word(report.verdict)))
    if report.hang:
        kind = report.hang.kind
        if report.hang.phase == "compile":
            lines.append(
                _(
                    "- **Hang kind:** {kind}, while compiling (its compile budget ran out)",
                    kind=kind,
                )
            )
        else:
            lines.append(_("- **Hang kind:** {kind}", kind=kind))
        if report.hang.proven:
            lines.append(
                _(
                    "- **Proven before the threshold:** {why}",
                    why=report.hang.proven,
                )
            )
        lines += _job_phase(report)
    if report.command:
        lines.append(_("- **Command:** `{command}`", command=" ".join(report.command)))
    if report.exit_code is not None:
        lines.append(_("- **Exit code:** {code}", code=report.exit_code))
    logs = report.capture.logs
    for log in logs:
        fields = {"path": log.path, "output": log.output_lines, "kernel": log.kernel_lines}
        if log.truncated:
            line = _(
                "- **Log:** `{path}` ({output} output lines, {kernel} kernel lines, "
                "last 20 MB only)",
                **fields,
            )
        else:
            line = _("- **Log:** `{path}` ({output} output lines, {kernel} kernel lines)", **fields)
        lines.append(line)
    return lines


def _capture_problems(report: Report) -> list[str]:
    lines: list[str] = []
    errors = report.capture.errors
    if errors:
        lines += [_("## Capture problems"), ""]
        lines += [
            _("- {probe}: {kind}: {message}", probe=e.probe, kind=e.kind, message=e.message)
            if e.pid is None
            else _(
                "- {probe} (pid {pid}): {kind}: {message}",
                probe=e.probe,
                pid=e.pid,
                kind=e.kind,
                message=e.message,
            )
            for e in errors
        ]
        lines.append("")
    return lines


def _processes(report: Report) -> list[str]:
    """The table of processes, then each one's threads and stacks."""
    lines: list[str] = []
    lines += [
        _("## Processes"),
        "",
        _("| pid | ppid | role | rank | state | CPU % | RSS MiB | threads |"),
        "|---|---|---|---|---|---|---|---|",
    ]
    for p in report.processes:
        rss = f"{p.rss_bytes / 2**20:.0f}" if p.rss_bytes else ""
        cpu = p.cpu_percent
        rank = "" if p.rank is None else str(p.rank)
        if p.stands_for is not None:  # a job analysed by class: the others it stands for
            rank += " " + (
                _(
                    "(and {more} more like it: {ranks})",
                    more=p.stands_for.size - 1,
                    ranks=spans_text(p.stands_for.ranks),
                )
                if p.stands_for.ranks
                else _("(and {more} more like it)", more=p.stands_for.size - 1)
            )
        lines.append(
            f"| {p.pid} | {p.ppid or ''} | {p.role.value} | {rank.strip()} | {p.state} | "
            f"{'' if cpu is None else cpu} | {rss} | {len(p.threads)} |"
        )
    lines.append("")
    for p in report.processes:
        lines += [f"### pid {p.pid} ({p.role.value}): `{' '.join(p.command)}`", ""]
        for t in p.threads:
            gil = _(", holds the GIL") if t.owns_gil else ""
            lines.append(f"- **{t.name}** (tid {t.tid}): {t.waiting_on}{gil}")
            lines += [
                _(
                    "  - `{file}:{line}` in `{function}`",
                    file=f.file,
                    line=f.line,
                    function=f.function,
                )
                + (f": `{f.code}`" if f.code else "")
                for f in t.stack
            ]
        lines.append("")
    return lines
