"""The stack tree (report.stack_tree) for people: a rich Tree for the terminal and a text tree for
report.md; templates/stack_tree.html.j2 draws the same for report.html.

Both are laid out once, the same way, so that they stay readable at 1,024 ranks: a run of
single frames is one node of several lines (long runs keep their ends and the culprit's line),
a node shows its few largest branches and says how many more there are, and past a budget of
lines only the odd and culprit branches are still opened. Renderers only format."""

from __future__ import annotations

from dataclasses import dataclass, field

from rich.text import Text
from rich.tree import Tree

from hangdoctor.i18n import N_, _, _n
from hangdoctor.report.model import Report
from hangdoctor.report.stack_tree import StackNode, StackTree, build_stack_tree

#: Branches shown under a node before "... N more"; the odd and the culprit's are always shown.
MAX_BRANCHES = 6
#: Lines of a run of single frames before its middle is left out (its first 2, last 3 kept).
MAX_RUN = 6
#: Lines of the whole tree after which only the odd and culprit branches are opened.
MAX_LINES = 120

_GROUP_LABELS = {
    "rank_main": N_("main threads of the ranks"),
    "process_main": N_("main threads of the other processes"),
    "other": N_("other threads"),
}


@dataclass(frozen=True, slots=True)
class Line:
    """One line of a node: a frame, a folded run, or the note of frames left out."""

    text: str
    library: bool = False  # library frames and notes: drawn dim
    culprit_line: bool = False


@dataclass(slots=True)
class Row:
    """A node as drawn: its lines, what it counts, its flags, and the rows under it."""

    lines: list[Line]
    counts: str = ""
    odd: bool = False
    culprit: bool = False
    minority: bool = False
    group: bool = False
    holds_culprit_line: bool = False  # the root cause's line is in this branch
    children: list[Row] = field(default_factory=list)


# --- words -------------------------------------------------------------------------------------


def group_label(node: StackNode, tree: StackTree) -> str:
    """`main threads of the ranks`; just `main threads` when no process is a rank."""
    if node.group == "process_main" and not any(g.group == "rank_main" for g in tree.groups):
        return _("main threads")
    return _(_GROUP_LABELS[node.group or "other"])


def frame_label(node: StackNode) -> str:
    """`train.py:52 in train: dist.all_reduce(loss)`, or a folded run of library frames:
    `torch: 3 library frames, down to all_reduce at distributed_c10d.py:2501`."""
    frame = node.frame
    if node.kind == "no_stack":
        if node.thread_name:
            return _("no Python stack: thread {name}", name=node.thread_name)
        return _("no Python stack")
    if frame is None:
        return ""
    where = node.where
    if node.kind == "library":
        return _n(
            "{libraries}: {function} at {where}",
            "{libraries}: {count} library frames, down to {function} at {where}",
            len(node.frames),
            libraries=", ".join(node.libraries),
            function=frame.function,
            where=where,
        )
    label = _("{where} in {function}", where=where, function=frame.function)
    return f"{label}: {frame.code.strip()}" if frame.code else label


def counts_label(node: StackNode) -> str:
    """`1023 threads, ranks 0-340,342-1023` (pids for processes that are no rank)."""
    threads = _n("{count} thread", "{count} threads", node.threads)
    if node.ranks:
        spans = node.rank_spans
        if spans.endswith("…"):
            who = _n(
                "{count} rank: {ranks}", "{count} ranks: {ranks}", len(node.ranks), ranks=spans
            )
        else:
            who = _n("rank {ranks}", "ranks {ranks}", len(node.ranks), ranks=spans)
    else:
        who = _n("pid {pids}", "pids {pids}", len(node.pids), pids=node.pid_spans)
    return f"{threads}, {who}"


def culprit_label(tree: StackTree) -> str:
    """What the culprit's mark says: whose culprit it is."""
    return _("culprit ({finding})", finding=tree.culprit_finding or "")


def tree_title(tree: StackTree) -> str:
    """`Stack tree: 1,031 threads of 1,152 processes`."""
    return _n(
        "Stack tree: {count} thread of {processes} processes",
        "Stack tree: {count} threads of {processes} processes",
        tree.threads,
        processes=tree.processes,
    )


# --- layout ------------------------------------------------------------------------------------


def layout(tree: StackTree) -> list[Row]:
    """The tree's groups as rows, with MAX_BRANCHES, MAX_RUN and MAX_LINES applied."""
    budget = [MAX_LINES]
    rows = []
    for group in tree.groups:
        row = Row(lines=[Line(group_label(group, tree))], counts=counts_label(group), group=True)
        row.culprit = group.culprit
        budget[0] -= 1
        row.children = _branches(group.children, tree, budget)
        rows.append(row)
    return rows


def _important(node: StackNode) -> bool:
    return node.odd or node.culprit


def _branches(children: tuple[StackNode, ...], tree: StackTree, budget: list[int]) -> list[Row]:
    """The rows of a node's branches: the first MAX_BRANCHES (all of them while the budget
    lasts), every odd and culprit one, then a row saying what was left out."""
    rows: list[Row] = []
    left_out: list[StackNode] = []
    for child in children:
        if _important(child) or (len(rows) < MAX_BRANCHES and budget[0] > 0):
            rows.append(_row(child, tree, budget))
        else:
            left_out.append(child)
    if left_out:
        text = _n("... {count} more branch", "... {count} more branches", len(left_out))
        threads = sum(n.threads for n in left_out)
        counts = _n("{count} thread", "{count} threads", threads)
        rows.append(Row(lines=[Line(text, library=True)], counts=counts))
        budget[0] -= 1
    return rows


def _row(node: StackNode, tree: StackTree, budget: list[int]) -> Row:
    chain = node.chain()
    lines = _run_lines(chain)
    budget[0] -= len(lines)
    last = chain[-1]
    row = Row(
        lines=lines,
        counts=counts_label(node),
        odd=node.odd,
        culprit=node.culprit,
        minority=node.minority,
        holds_culprit_line=node.holds_culprit_line,
    )
    row.children = _branches(last.children, tree, budget)
    return row


def _run_lines(chain: tuple[StackNode, ...]) -> list[Line]:
    """A run's lines: all of a short run; of a long one its first 2 and last 3 frames and the
    culprit's line, each gap said in one line."""
    keep = set(range(len(chain)))
    if len(chain) > MAX_RUN:
        keep = {0, 1, *range(len(chain) - 3, len(chain))}
        keep |= {i for i, n in enumerate(chain) if n.culprit_line}
    lines: list[Line] = []
    skipped = 0
    for index, node in enumerate(chain):
        if index not in keep:
            skipped += 1
            continue
        if skipped:
            lines.append(_skipped(skipped))
            skipped = 0
        lines.append(
            Line(frame_label(node), library=node.kind != "frame", culprit_line=node.culprit_line)
        )
    return lines


def _skipped(count: int) -> Line:
    return Line(_n("⋯ {count} more frame", "⋯ {count} more frames", count), library=True)


def _odd_mark(row: Row, odd: str) -> str:
    """An odd branch's mark: a minority of the ranks is the odd one out; the culprit's branch,
    when the line the root cause names is not in it (an earlier line, long returned from),
    says it is the culprit's; where that line is in it, the line carries the mark."""
    if row.minority:
        return f"  ◀ {odd}"
    if row.culprit and not row.holds_culprit_line:
        mark = _("culprit's branch")
        return f"  ◀ {mark}"
    return ""


# --- the terminal ------------------------------------------------------------------------------

_ODD_STYLE = "bold yellow"
_CULPRIT_STYLE = "bold red"


def stack_tree_renderable(tree: StackTree) -> Tree:
    """The tree as a rich Tree: odd branches yellow, the culprit's red, its line marked."""
    root = Tree(Text(tree_title(tree), style="bold"), guide_style="dim")
    marker = culprit_label(tree)
    odd = _("odd one out")
    for row in layout(tree):
        _add(root, row, marker, odd)
    return root


def _add(parent: Tree, row: Row, marker: str, odd: str) -> None:
    label = Text()
    style = _CULPRIT_STYLE if row.culprit else _ODD_STYLE if row.odd else ""
    for index, line in enumerate(row.lines):
        if index:
            label.append("\n")
        line_style = style or ("dim" if line.library else "")
        label.append(line.text, style="bold" if row.group else line_style)
        if index == 0 and row.counts:
            label.append(f"  [{row.counts}]", style="cyan")
        if index == 0 and row.odd and not row.group:
            label.append(_odd_mark(row, odd), style=style or _ODD_STYLE)
        if line.culprit_line:
            label.append(f"  ◀ {marker}", style=_CULPRIT_STYLE)
    branch = parent.add(label)
    for child in row.children:
        _add(branch, child, marker, odd)


# --- report.md ---------------------------------------------------------------------------------


def stack_tree_lines(tree: StackTree) -> list[str]:
    """The tree as lines of text (drawn with box characters), for a fenced block."""
    marker = culprit_label(tree)
    odd = _("odd one out")
    lines = [tree_title(tree)]
    rows = layout(tree)
    for index, row in enumerate(rows):
        _text(row, "", index == len(rows) - 1, marker, odd, lines)
    return lines


def _text(row: Row, indent: str, last: bool, marker: str, odd: str, out: list[str]) -> None:
    head, rest = ("└── ", "    ") if last else ("├── ", "│   ")
    for index, line in enumerate(row.lines):
        text = line.text
        if index == 0 and row.counts:
            text += f"  [{row.counts}]"
        if index == 0 and row.odd and not row.group:
            text += _odd_mark(row, odd)
        if line.culprit_line:
            text += f"  ◀ {marker}"
        out.append(f"{indent}{head if index == 0 else rest}{text}".rstrip())
    for index, child in enumerate(row.children):
        _text(child, indent + rest, index == len(row.children) - 1, marker, odd, out)


def stack_tree_section(report: Report) -> list[str]:
    """report.md's "Stack tree" section; nothing when no thread has a Python stack."""
    tree = build_stack_tree(report)
    if not any(node.frames for node in tree.walk()):
        return []
    lines = ["## " + _("Stack tree"), "", "```text", *stack_tree_lines(tree), "```", ""]
    if tree.culprit_finding:
        lines += [
            _(
                "Marked ◀: the branch of the culprit of {finding}, and the odd ones out (less "
                "than half the ranks of their largest sibling).",
                finding=tree.culprit_finding,
            ),
            "",
        ]
    return lines
