"""The terminal summary: what hung, where, why, and what to do, readable in ten seconds.

In a terminal the root cause is boxed; anywhere else (a pipe, a CI log, `TERM=dumb`,
`NO_COLOR`) it is plain text, since box characters and colour codes make a log harder to read.
Either way each line is wrapped to the width with a hanging indent (its continuation starts
under its text, not at the margin) and nothing is cut: a title cut mid-word hides the one name
the reader needed. What does not fit in a screen (more evidence, more fixes, the stacks) is in
report.md, and the summary says how much of it there is."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from rich.cells import cell_len
from rich.console import Console
from rich.panel import Panel
from rich.text import Text

from hangdoctor.i18n import N_, _, _n
from hangdoctor.report.model import Report
from hangdoctor.report.render_markdown import (
    culprit_line,
    finding_label,
    has_root_cause,
    no_python_line,
    severity_word,
    verdict_word,
)
from hangdoctor.report.render_stack_tree import stack_tree_lines, stack_tree_renderable
from hangdoctor.report.rule_docs import rule_doc
from hangdoctor.report.stack_tree import build_stack_tree
from hangdoctor.rules.finding import Finding

_VERDICT_STYLE = {
    "hung": "bold red",
    "failed": "bold red",
    "running": "bold green",
    "completed": "bold green",
    "interrupted": "bold yellow",
}
_HANG_KINDS = {"idle": N_("idle"), "busy": N_("busy")}

#: The root cause shows this many evidence lines and fixes at most, and no more screen lines
#: for them than the budget (always at least the first): the rest is in report.md.
EVIDENCE_SHOWN, EVIDENCE_LINES = 3, 6
FIXES_SHOWN, FIX_LINES = 2, 6
CAPTURE_ERRORS_SHOWN = 3
#: A box wider than this is hard to read on a wide terminal; a log keeps its own width.
BOX_MAX_WIDTH = 120
_BOX_INSIDE = 4  # the box's borders and padding, left and right
_TITLE_HANG = 4
_FULLWIDTH_COLON = "\uff1a"  # ends a Chinese label: it carries its own space


def summary_console(stderr: bool = False) -> Console:
    """The console the summary is printed on: rich decides from the stream and the environment
    (a terminal, `NO_COLOR`, `TERM=dumb`) whether it is boxed and coloured."""
    return Console(stderr=stderr, highlight=False, soft_wrap=False)


def boxed(console: Console) -> bool:
    """Whether the summary gets a box: only on a terminal that can show one."""
    return console.is_terminal and not console.is_dumb_terminal and not console.no_color


class _Lines:
    """The summary's lines, each already wrapped to `width` with a hanging indent."""

    def __init__(self, console: Console, width: int) -> None:
        self.console = console
        self.width = width
        self.lines: list[Text] = []

    def add(
        self,
        lead: str,
        text: str | Text,
        style: str = "",
        lead_style: str = "",
        hang: int | None = None,
    ) -> None:
        """`lead` then `text`, wrapped so that every continuation starts under the text, or
        `hang` columns in where given (a word longer than the line is folded, never cut)."""
        body = Text(text, style=style) if isinstance(text, str) else text
        head = Text(lead, style=lead_style)
        if hang is None:
            hang = cell_len(lead)
        if hang > self.width // 2:  # a narrow console: indent a little, keep room for text
            hang = min(4, hang)
        if hang < cell_len(lead):  # the lead is wrapped with the text, on a shorter line
            body, head = head + body, Text()
        room = max(self.width - hang, 8)
        wrapped = body.wrap(self.console, room, overflow="fold")
        for number, line in enumerate(wrapped):
            line.rstrip()
            self.lines.append((head if number == 0 else Text(" " * hang)) + line)
        if not wrapped:
            self.lines.append(Text(lead.rstrip(), style=lead_style))

    def joined(self) -> Text:
        return Text("\n").join(self.lines)


def _lead(label: str) -> str:
    """A label and the space before its text; none after a full-width colon (Chinese)."""
    return label if label.endswith(_FULLWIDTH_COLON) else label + " "


def _count(number: int, role: str) -> str:
    if role == "launcher":
        return _n("{count} launcher", "{count} launchers", number)
    if role == "rank":
        return _n("{count} rank", "{count} ranks", number)
    if role == "main":
        return _n("{count} main process", "{count} main processes", number)
    if role == "dataloader_worker":
        return _n("{count} DataLoader worker", "{count} DataLoader workers", number)
    if role == "child":
        return _n("{count} child process", "{count} child processes", number)
    return _n("{count} helper process", "{count} helper processes", number)


def _header(report: Report, out: _Lines) -> None:
    """`hangdoctor: HUNG (idle)  1 launcher, 2 ranks`."""
    verdict = verdict_word(report.verdict)
    if report.verdict == verdict:  # English: shouted, as the word that matters
        verdict = verdict.upper()
    line = Text()
    line.append(verdict, style=_VERDICT_STYLE.get(report.verdict, "bold"))
    if report.hang:
        kind = _(_HANG_KINDS.get(report.hang.kind, report.hang.kind))
        if report.hang.phase == "compile":
            line.append(" " + _("({kind}, while compiling)", kind=kind))
        elif report.hang.proven:
            line.append(" " + _("({kind}, proven before the threshold)", kind=kind))
        else:
            line.append(f" ({kind})")
    roles: dict[str, int] = {}
    for process in report.processes:
        roles[process.role.value] = roles.get(process.role.value, 0) + 1
    what = [_count(n, r) for r, n in roles.items()]
    logs = report.capture.logs
    if logs:
        what.append(_n("{count} log file", "{count} log files", len(logs)))
    if what:
        line.append("  " + _(", ").join(what))
    out.add("hangdoctor: ", line)


def _more(count: int, report_dir: str | None) -> str:
    if report_dir:
        return _("... {count} more in report.md", count=count)
    return _("... {count} more in the full report (--json)", count=count)


def _items(
    out: _Lines,
    entries: Sequence[str],
    marker: str,
    shown: int,
    budget: int,
    report_dir: str | None,
) -> None:
    """Up to `shown` entries in up to `budget` lines (the first always), then how many more."""
    start = len(out.lines)
    given = 0
    for entry in entries[:shown]:
        before = len(out.lines)
        out.add(marker.format(number=given + 1), entry)
        if given and len(out.lines) - start > budget:
            del out.lines[before:]
            break
        given += 1
    left = len(entries) - given
    if left:
        out.add("  ", _more(left, report_dir), style="dim")


def _title(report: Report, index: int, finding: Finding, out: _Lines) -> str:
    """`Root cause: <title>` and its rule line under it; returns the box's colour."""
    root = index == 0 and has_root_cause(report)
    colour = "red" if root else "yellow"
    lead = _lead(_("{label}:", label=finding_label(report, index)))
    # A title is long: its continuation a little in, not under its label, to keep it short.
    out.add(lead, finding.title, style="bold", lead_style=f"bold {colour}", hang=_TITLE_HANG)
    meta = _(
        "{rule}  {category}  {severity}, confidence {confidence:.0%}",
        rule=finding.id,
        category=finding.category,
        severity=severity_word(finding.severity.value),
        confidence=finding.confidence,
    )
    out.add(" " * _TITLE_HANG, meta, style="dim")
    return colour


def _culprit(finding: Finding, out: _Lines, code: bool) -> None:
    """`Culprit: <who, where>` and, with `code`, the line of code under it."""
    lead = _lead(_("Culprit:"))
    out.add(lead, culprit_line(finding.culprit), lead_style="bold")
    location = finding.culprit.location if finding.culprit else None
    if code and location and location.code:
        out.add(" " * cell_len(lead), location.code, style="cyan")


def _root_cause(
    report: Report, finding: Finding, console: Console, width: int, report_dir: str | None
) -> None:
    """The first finding in full: title, culprit and its line, the top evidence, what to do."""
    out = _Lines(console, width)
    colour = _title(report, 0, finding, out)
    _culprit(finding, out, code=True)
    if finding.evidence:
        out.add("", _("Evidence:"), style="bold")
        _items(out, finding.evidence, "  - ", EVIDENCE_SHOWN, EVIDENCE_LINES, report_dir)
    if finding.fixes:
        out.add("", _("What to do:"), style="bold green")
        _items(out, finding.fixes, "  {number}. ", FIXES_SHOWN, FIX_LINES, report_dir)
    doc = rule_doc(finding.id)
    if doc:
        out.add("", _("About {rule}: {doc}", rule=finding.id, doc=doc), style="dim")
    _show(console, out, colour)


def _other(report: Report, index: int, finding: Finding, console: Console, width: int) -> None:
    """A finding after the first: its title, rule and culprit."""
    out = _Lines(console, width)
    _title(report, index, finding, out)
    if finding.culprit is not None:
        _culprit(finding, out, code=False)
    _show(console, out, None)


#: Plain text gets the stack tree drawn in ASCII: a log has no box characters either.
_ASCII_GUIDES = {"├── ": "|-- ", "└── ": "`-- ", "│   ": "|   "}
#: The terminal shows the tree only where ranks can differ: two ranks or more.
TREE_MIN_RANKS = 2


def _ranks_tree(report: Report, console: Console) -> None:
    """The ranks' main threads merged into one tree, the odd branch and the culprit's marked:
    at a glance which ranks stand elsewhere. The whole tree (helper threads, other processes)
    is in report.md and report.html."""
    if report.verdict != "hung":
        return
    tree = build_stack_tree(report)
    ranks = [group for group in tree.groups if group.group == "rank_main"]
    if not ranks or len(ranks[0].ranks) < TREE_MIN_RANKS:
        return
    [group] = ranks
    tree = replace(tree, groups=(group,), threads=group.threads, processes=len(group.pids))
    if boxed(console):
        console.print(stack_tree_renderable(tree))
        return
    console.print()
    for line in stack_tree_lines(tree):
        for wrapped in _wrapped_tree_line(line, console):
            console.print(Text(wrapped), soft_wrap=True)


def _wrapped_tree_line(line: str, console: Console) -> list[str]:
    """A text tree's line in ASCII, wrapped to the console's width (in cells: a Chinese
    character takes two) under its own text, the guides to its left repeated so that the
    tree's shape survives in a log."""
    for guide, ascii_guide in _ASCII_GUIDES.items():
        line = line.replace(guide, ascii_guide)
    text = line.lstrip("|`- ")
    prefix = line[: len(line) - len(text)]
    hanging = prefix.replace("|-- ", "|   ").replace("`-- ", "    ")
    room = max(console.width - len(prefix), 20)
    pieces = [piece.plain.rstrip() for piece in Text(text).wrap(console, room)] or [""]
    return [prefix + pieces[0], *(hanging + piece for piece in pieces[1:])]


def _show(console: Console, out: _Lines, box: str | None) -> None:
    """A block of the summary: on a terminal boxed in `box`'s colour (when given), elsewhere
    after a blank line (a log has no box to tell the blocks apart)."""
    if not boxed(console):
        console.print()
        console.print(out.joined(), soft_wrap=True)
    elif box is not None:
        console.print(Panel(out.joined(), border_style=box, padding=(0, 1), expand=False))
    else:
        console.print(out.joined(), soft_wrap=True)


def render_terminal(
    report: Report, console: Console, report_dir: str | None = None, max_findings: int = 3
) -> None:
    """Print the summary to `console`: the verdict, the root cause in full, then up to
    `max_findings - 1` more findings in short."""
    width = console.width
    inner = min(width, BOX_MAX_WIDTH) - _BOX_INSIDE if boxed(console) else width
    out = _Lines(console, width)
    _header(report, out)
    not_python = no_python_line(report)
    if not_python:
        out.add("", not_python, style="yellow")
    logs = report.capture.logs
    if not report.findings:
        if logs and not report.processes:
            out.add("", _("No problem found in these logs."))
        else:
            out.add("", _("No problem found in this capture."))
    console.print(out.joined(), soft_wrap=True)
    for index, finding in enumerate(report.findings[:max_findings]):
        if index == 0:
            _root_cause(report, finding, console, inner, report_dir)
            _ranks_tree(report, console)
        else:
            _other(report, index, finding, console, width)
    out = _Lines(console, width)
    if len(report.findings) > max_findings:
        left = len(report.findings) - max_findings
        out.add(
            "",
            _n(
                "... and {count} more finding in the report.",
                "... and {count} more findings in the report.",
                left,
            ),
        )
    errors = [e for e in report.capture.errors if e.kind != "not_python"]
    for error in errors[:CAPTURE_ERRORS_SHOWN]:
        out.add(
            _lead(_("capture:")),
            _("{probe}: {message}", probe=error.probe, message=error.message)
            if error.pid is None
            else _(
                "{probe} pid {pid}: {message}",
                probe=error.probe,
                pid=error.pid,
                message=error.message,
            ),
            style="yellow",
            lead_style="yellow",
        )
    if len(errors) > CAPTURE_ERRORS_SHOWN:
        out.add("  ", _more(len(errors) - CAPTURE_ERRORS_SHOWN, report_dir), style="dim")
    if report_dir:
        out.add(
            _lead(_("Report:")),
            _(
                "{path} (and report.html, report.json, evidence.json)",
                path=report_dir + "/report.md",
            ),
            lead_style="bold",
        )
    if out.lines:
        _show(console, out, None)
