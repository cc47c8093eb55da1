"""Every thread of every process and rank merged into one prefix tree of frames, as LLNL's STAT
does: at 1,024 ranks a list of stacks is unreadable, a tree of the few distinct ones is not,
and the odd branch (the ranks that are somewhere else) is where a hang is usually decided.

A pure function of the typed `Report`, so that `hangdoctor report DIR` builds it again from
report.json alone. The tree is rooted at the outermost frame; runs of library frames (torch,
the standard library, other packages, native code, hangdoctor's own hooks) are folded into one
node that names the libraries, so the user's own frames stand out. Threads are grouped first:
the ranks' main threads, then the other processes' main threads (launchers, DataLoader
workers), then every other thread (pin-memory, watchdogs, gloo's loops), so that thousands of
identical idle helpers do not drown the ranks. hangdoctor's own status thread is left out.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Literal

from hangdoctor.analysis.frames import PROBE_FILES, Origin, origin, short_file
from hangdoctor.analysis.rank_sets import rank_spans
from hangdoctor.evidence.model import Frame
from hangdoctor.report.model import ProcessReport, Report, StackFrame, ThreadReport
from hangdoctor.rules.finding import Culprit

NodeKind = Literal["group", "frame", "library", "no_stack"]
#: The groups threads are sorted into, in the order they are shown.
GroupKind = Literal["rank_main", "process_main", "other"]
GROUP_ORDER: tuple[GroupKind, ...] = ("rank_main", "process_main", "other")


@dataclass(frozen=True, slots=True)
class StackNode:
    """One node of the tree: a group of threads, a user frame, a folded run of library frames,
    or threads with no Python stack. Its counts are those of every thread through it."""

    kind: NodeKind
    #: `frame`: its one frame; `library`: the folded frames, outermost first.
    frames: tuple[StackFrame, ...] = ()
    #: `library`: the libraries of the folded frames, outermost first (`torch`, `threading`).
    libraries: tuple[str, ...] = ()
    group: GroupKind | None = None
    #: `no_stack`: the thread name its threads share.
    thread_name: str | None = None
    #: Threads through this node, and of those, threads whose stack ends here.
    threads: int = 0
    ending: int = 0
    ranks: tuple[int, ...] = ()
    pids: tuple[int, ...] = ()
    children: tuple[StackNode, ...] = ()
    #: A minority branch among its siblings (in ranks), or the branch of the culprit.
    odd: bool = False
    #: Of those, a minority: less than half the ranks of its largest sibling.
    minority: bool = False
    #: The root cause's culprit thread goes through this node.
    culprit: bool = False
    #: This node holds the very line the root cause names.
    culprit_line: bool = False

    @property
    def frame(self) -> StackFrame | None:
        """The node's frame: the one of a user frame, the innermost of a folded run."""
        return self.frames[-1] if self.frames else None

    @property
    def where(self) -> str:
        """`train.py:52`: the node's frame, short enough to read (empty without one)."""
        frame = self.frame
        return f"{short_file(frame.file)}:{frame.line}" if frame else ""

    @property
    def rank_spans(self) -> str:
        """The node's ranks written compactly (`0-6,8-15`), at most 8 runs."""
        return rank_spans(self.ranks, limit=8)

    @property
    def pid_spans(self) -> str:
        """The node's pids, the same way (for processes that are no rank)."""
        return rank_spans(self.pids, limit=8)

    def chain(self) -> tuple[StackNode, ...]:
        """This node and the single children after it, up to the first node that branches,
        ends a stack or ends the tree: the stretch a renderer may show as one run of lines."""
        nodes = [self]
        while len(nodes[-1].children) == 1 and nodes[-1].ending == 0:
            nodes.append(nodes[-1].children[0])
        return tuple(nodes)

    @property
    def holds_culprit_line(self) -> bool:
        """Whether the line the root cause names is at this node or below it."""
        return any(node.culprit_line for node in self.walk())

    def walk(self) -> Iterator[StackNode]:
        """This node and every node below it, depth first."""
        pending = [self]
        while pending:
            node = pending.pop()
            yield node
            pending.extend(reversed(node.children))


@dataclass(frozen=True, slots=True)
class StackTree:
    """The merged tree: its groups in GROUP_ORDER, and what it was built from."""

    groups: tuple[StackNode, ...]
    threads: int
    ranks: tuple[int, ...]
    processes: int
    #: The root cause's culprit, when the report has one whose thread is in the tree.
    culprit: Culprit | None = None
    #: The id of the finding whose culprit it is (`HD315`), to link to.
    culprit_finding: str | None = None
    #: hangdoctor's own threads, left out.
    omitted_threads: int = 0

    @property
    def holds_culprit_line(self) -> bool:
        """Whether the line the root cause names is on some thread's stack now (it may be an
        earlier line of the program, long returned from)."""
        return any(group.holds_culprit_line for group in self.groups)

    def walk(self) -> Iterator[StackNode]:
        """Every node, group by group, depth first."""
        for group in self.groups:
            yield from group.walk()


# --- building ----------------------------------------------------------------------------------


@functools.lru_cache(maxsize=8192)
def _library(file: str, native: bool) -> str | None:
    """The library a frame's code belongs to (`torch`, `threading`, `native`, `hangdoctor`),
    or None for the user's own code; classified by analysis.frames, once a file."""
    kind = origin(Frame(function="", file=file, line=0, native=native))
    if kind is Origin.USER:
        return None
    if kind is Origin.NATIVE:
        return "native"
    if kind is Origin.TOOL:
        return "hangdoctor"
    path = file.replace("\\", "/")
    if path.startswith("<"):  # <frozen importlib._bootstrap>
        name = path.strip("<>").split()[-1]
        return name.split(".")[0] or "stdlib"
    if kind is Origin.PACKAGE:
        for marker in ("/site-packages/", "/dist-packages/"):
            if marker in path:
                return _module(path.split(marker, 1)[1])
    parts = path.split("/")
    for index, part in enumerate(parts[:-1]):  # .../lib/python3.11/concurrent/futures/x.py
        if (
            part.startswith(("python", "pypy"))
            and index > 0
            and parts[index - 1] in ("lib", "lib64")
        ):
            return _module("/".join(parts[index + 1 :]))
    return "stdlib"


def _module(relative: str) -> str:
    """`torch` for `torch/distributed/run.py`, `six` for `six.py`."""
    head = relative.split("/", 1)[0]
    return head.removesuffix(".py") or "stdlib"


def _own(thread: ThreadReport) -> bool:
    """hangdoctor's status thread: its innermost Python frame is the probe's own."""
    python = [f for f in thread.stack if not f.native]
    return bool(python) and python[0].file.endswith(PROBE_FILES)


_Key = tuple[str, int, str, bool] | tuple[str, str]


@dataclass(slots=True)
class _Trie:
    """A node while the tree is being built."""

    key: _Key
    frame: StackFrame | None
    threads: int = 0
    ending: int = 0
    ranks: set[int] = field(default_factory=set)
    pids: set[int] = field(default_factory=set)
    culprit: bool = False
    children: dict[_Key, _Trie] = field(default_factory=dict)

    def add(self, stack: _Stack) -> None:
        self.threads += stack.threads
        self.ranks |= stack.ranks
        self.pids |= stack.pids
        self.culprit = self.culprit or stack.culprit


@dataclass(slots=True)
class _Stack:
    """The threads that have one same stack (outermost frame first)."""

    frames: list[StackFrame]
    threads: int = 0
    ranks: set[int] = field(default_factory=set)
    pids: set[int] = field(default_factory=set)
    culprit: bool = False


def _ranks_of(processes: list[ProcessReport]) -> list[int | None]:
    """Each process's rank, or its nearest ancestor's: a DataLoader worker of rank 7 counts as
    rank 7, so that its branch says whose worker it is."""
    by_key = {(p.host, p.pid): p for p in processes}
    ranks: list[int | None] = []
    for process in processes:
        current: ProcessReport | None = process
        seen = 0
        while current is not None and current.rank is None and seen < 64:
            parent = current.ppid
            current = by_key.get((current.host, parent)) if parent is not None else None
            seen += 1
        ranks.append(current.rank if current is not None else None)
    return ranks


def _members(process: ProcessReport, rank: int | None) -> set[int]:
    """The ranks a process is, serves or stands for."""
    if process.stands_for is not None and process.stands_for.ranks:
        return {r for low, high in process.stands_for.ranks for r in range(low, high + 1)}
    return {rank} if rank is not None else set()


def _culprit_thread(report: Report) -> tuple[Culprit, str, tuple[str | None, int], int] | None:
    """The culprit of the report's first finding, and the process and thread it names."""
    finding = report.root_cause
    culprit = finding.culprit if finding else None
    if finding is None or culprit is None:
        return None
    for process in report.processes:
        if culprit.host is not None and process.host not in (None, culprit.host):
            continue
        if culprit.pid is not None:
            if process.pid != culprit.pid:
                continue
        elif culprit.rank is None or process.rank != culprit.rank:
            continue
        tid = culprit.tid if culprit.tid is not None else process.pid
        return culprit, finding.id, (process.host, process.pid), tid
    return None


def _group_of(process: ProcessReport, thread: ThreadReport) -> GroupKind:
    if thread.tid != process.pid:
        return "other"
    return "rank_main" if process.rank is not None else "process_main"


def _is_culprit_line(node: _Trie, culprit: Culprit | None) -> bool:
    location = culprit.location if culprit else None
    frame = node.frame
    return (
        location is not None
        and frame is not None
        and frame.line == location.line
        and frame.file == location.file
    )


def build_stack_tree(report: Report) -> StackTree:
    """The report's threads merged into one tree (see the module's docstring)."""
    found = _culprit_thread(report)
    culprit, culprit_finding, culprit_process, culprit_tid = found or (None, None, None, None)
    # Threads with the same stack are merged first (at scale most are), then each distinct
    # stack walks the trie once.
    same: dict[tuple[GroupKind, tuple[_Key, ...]], _Stack] = {}
    omitted = 0
    all_ranks: set[int] = set()
    for process, rank in zip(report.processes, _ranks_of(report.processes), strict=True):
        # a process that stands for a class (`nodes.classes`) counts as all of them
        members = _members(process, rank)
        weight = process.stands_for.size if process.stands_for is not None else 1
        all_ranks |= members
        for thread in process.threads:
            if _own(thread):
                omitted += 1
                continue
            keys: tuple[_Key, ...] = (
                tuple((f.file, f.line, f.function, f.native) for f in reversed(thread.stack))
                if thread.stack
                else (("no_stack", thread.name or ""),)
            )
            entry = same.get((_group_of(process, thread), keys))
            if entry is None:
                entry = same[_group_of(process, thread), keys] = _Stack(thread.stack[::-1])
            entry.threads += weight
            entry.ranks |= members
            entry.pids.add(process.pid)
            entry.culprit = entry.culprit or (
                culprit_process == (process.host, process.pid) and thread.tid == culprit_tid
            )
    roots: dict[GroupKind, _Trie] = {}
    for (group, keys), entry in same.items():
        node = roots.get(group)
        if node is None:
            node = roots[group] = _Trie(key=("group", group), frame=None)
        node.add(entry)
        frames: list[StackFrame | None] = [*entry.frames] if entry.frames else [None]
        for key, frame in zip(keys, frames, strict=True):
            child = node.children.get(key)
            if child is None:
                child = node.children[key] = _Trie(key=key, frame=frame)
            child.add(entry)
            node = child
        node.ending += entry.threads
    groups = tuple(_freeze(roots[kind], kind, culprit) for kind in GROUP_ORDER if kind in roots)
    in_tree = any(g.culprit for g in groups)
    return StackTree(
        groups=groups,
        threads=sum(g.threads for g in groups),
        ranks=tuple(sorted(all_ranks)),
        processes=sum(p.stands_for.size if p.stands_for else 1 for p in report.processes),
        culprit=culprit if in_tree else None,
        culprit_finding=culprit_finding if in_tree else None,
        omitted_threads=omitted,
    )


def _run(start: _Trie) -> list[_Trie]:
    """`start` and the library frames after it that fold into one node with it: single
    children, no stack ending between them."""
    nodes = [start]
    frame = start.frame
    if frame is None or _library(frame.file, frame.native) is None:
        return nodes
    while nodes[-1].ending == 0 and len(nodes[-1].children) == 1:
        child = next(iter(nodes[-1].children.values()))
        if child.frame is None or _library(child.frame.file, child.frame.native) is None:
            break
        nodes.append(child)
    return nodes


def _order(node: StackNode) -> tuple[int, int, int, str]:
    """Siblings by threads (most first), then ranks, then where they are (a stable order)."""
    frame = node.frame
    where = f"{frame.file}:{frame.line}" if frame else node.thread_name or ""
    return (-node.threads, -len(node.ranks), node.ranks[0] if node.ranks else -1, where)


def _freeze(root: _Trie, group: GroupKind, culprit: Culprit | None) -> StackNode:
    """The built trie as immutable nodes, library runs folded and odd branches marked;
    iterative (a recursive job can have stacks deeper than Python's recursion limit)."""
    by_ranks = group in ("rank_main", "process_main")
    # Post-order over runs: each entry is the run of trie nodes one StackNode stands for.
    done: dict[int, StackNode] = {}
    pending: list[tuple[list[_Trie], list[list[_Trie]] | None]] = [([root], None)]
    while pending:
        run, child_runs = pending.pop()
        if child_runs is None:
            child_runs = [_run(child) for child in run[-1].children.values()]
            pending.append((run, child_runs))
            pending.extend((child_run, None) for child_run in child_runs)
            continue
        children = sorted((done.pop(id(child_run[0])) for child_run in child_runs), key=_order)
        if len(children) > 1:
            children = _mark_odd(children, by_ranks)
        done[id(run[0])] = _node(run, group, children, culprit)
    return done[id(root)]


def _node(
    run: list[_Trie], group: GroupKind, children: list[StackNode], culprit: Culprit | None
) -> StackNode:
    """The StackNode a run of trie nodes stands for."""
    first, last = run[0], run[-1]
    frames = tuple(n.frame for n in run if n.frame is not None)
    kind: NodeKind
    if first.key[0] == "group":
        kind = "group"
    elif first.key[0] == "no_stack":
        kind = "no_stack"
    elif _library(frames[0].file, frames[0].native) is None:
        kind = "frame"
    else:
        kind = "library"
    libraries = (
        tuple(dict.fromkeys(_library(f.file, f.native) or "" for f in frames))
        if kind == "library"
        else ()
    )
    return StackNode(
        kind=kind,
        frames=frames,
        libraries=libraries,
        group=group if kind == "group" else None,
        thread_name=str(first.key[1]) if kind == "no_stack" else None,
        threads=last.threads,
        ending=last.ending,
        ranks=tuple(sorted(last.ranks)),
        pids=tuple(sorted(last.pids)),
        children=tuple(children),
        culprit=last.culprit,
        culprit_line=last.culprit and any(_is_culprit_line(n, culprit) for n in run),
    )


def _mark_odd(children: list[StackNode], by_ranks: bool) -> list[StackNode]:
    """Among the ranks' main threads, siblings with less than half the ranks of the largest
    one are the odd ones out (helper threads differ between ranks for good reasons: rank 0
    serves the store); the culprit's branch is always marked, whatever its size."""
    largest = max(len(c.ranks) for c in children)
    marked = []
    for c in children:
        minority = bool(by_ranks and c.ranks and 2 * len(c.ranks) < largest)
        marked.append(replace(c, odd=True, minority=minority) if c.culprit or minority else c)
    return marked
