"""Nodes that are alike, listed once (issue 28): what `nodes.classes` does for ranks, for nodes.

At a hang of a job of 16,384 nodes nearly every node shows the same thing: its ranks fall in
the same classes (the same stacks, progress and Flight Recorder state), and it answered the
exchange. A view that listed every node would grow with the job at every level of the merge
tree, and so would each report; a reader needs the few nodes that differ. So the nodes of one
block are folded as the block is merged: numbered nodes of the same shape (`node_shape`: the
classes of their ranks) and the same state in the session (joined, answered, silent) become
one `NodeClass` with compact node ranges, once at least `FOLD_FROM` of them are alike; the
others (the node of a straggler, a node that never answered) stay `NodeSeen` one by one.
Classes of different blocks that are alike join at the next level, so the whole job's view
holds a few classes and its outliers, however many nodes it has.

A job of at most `LISTED_NODES` nodes is never folded: its report lists every node, as before.
Named nodes (host names, no node rank) have no ranges to fold into and are listed."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from hangdoctor.analysis.rank_sets import Spans, spans_text, union_ranges
from hangdoctor.evidence.model import Bundle, NodeClass, NodeSeen
from hangdoctor.nodes.classes import reduce_to_classes

#: Alike nodes fewer than this are listed one by one (three outliers stay three rows).
FOLD_FROM = 8
#: A job of at most this many nodes lists every node (as a report does).
LISTED_NODES = 64
#: A node not heard from for this long is silent (`exchange.SILENT_S`; repeated here so that
#: this module needs no network code).
SILENT_S = 6.0

_Key = tuple[str | None, bool, bool, bool]


def node_shape(bundle: Bundle) -> str | None:
    """What a node's ranks showed, as a short digest of their classes and sizes: two nodes of
    the same shape are alike to every rule. None for a node with no processes."""
    if not bundle.snapshots or not bundle.snapshots[0].processes:
        return None
    processes = bundle.snapshots[0].processes
    if any(p.rank_class is None for p in processes):
        processes = reduce_to_classes(bundle).snapshots[0].processes
    parts = sorted((p.rank_class.key, p.rank_class.size) for p in processes if p.rank_class)
    return hashlib.blake2b(repr(parts).encode(), digest_size=8).hexdigest()


def _silent(seconds: float | None) -> bool:
    return seconds is not None and seconds >= SILENT_S


def _key_of_node(node: NodeSeen) -> _Key:
    # a node that answered is alike whatever the age of its last beat
    silent = not node.answered and _silent(node.silent_s)
    return (node.shape, node.joined, node.answered, silent)


def _key_of_class(found: NodeClass) -> _Key:
    silent = not found.answered and _silent(found.silent_s)
    return (found.shape, found.joined, found.answered, silent)


@dataclass
class _Group:
    nodes: list[NodeSeen] = field(default_factory=list)
    classes: list[NodeClass] = field(default_factory=list)

    @property
    def count(self) -> int:
        return len(self.nodes) + sum(c.count for c in self.classes)


def _longest(values: Iterable[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return max(known) if known else None


def _as_class(key: _Key, group: _Group) -> NodeClass:
    spans = union_ranges(
        [*(s for c in group.classes for s in c.nodes), *((int(n.node),) * 2 for n in group.nodes)]
    )
    firsts: list[tuple[int, str | None]] = [(c.nodes[0][0], c.host) for c in group.classes]
    firsts += [(int(n.node), n.host) for n in group.nodes]
    lasts: list[tuple[int, str | None]] = [(c.nodes[-1][1], c.last_host) for c in group.classes]
    lasts += [(int(n.node), n.host) for n in group.nodes]
    ranks = union_ranges(
        [
            *(s for c in group.classes for s in c.ranks),
            *((r, r) for n in group.nodes for r in n.ranks),
        ]
    )
    return NodeClass(
        nodes=spans,
        count=group.count,
        shape=key[0],
        host=min(firsts, key=lambda f: f[0])[1],
        last_host=max(lasts, key=lambda f: f[0])[1],
        ranks=ranks,
        joined=key[1],
        answered=key[2],
        silent_s=_longest(
            [*(c.silent_s for c in group.classes), *(n.silent_s for n in group.nodes)]
        ),
    )


def fold(
    nodes: Iterable[NodeSeen], classes: Iterable[NodeClass], job_nodes: int
) -> tuple[tuple[NodeSeen, ...], tuple[NodeClass, ...]]:
    """`nodes` and `classes` (of the blocks being merged) with alike nodes folded into classes
    (see the module's docstring); `job_nodes`: how many nodes the whole job has."""
    nodes, classes = list(nodes), list(classes)
    if job_nodes <= LISTED_NODES and not classes:
        return tuple(nodes), ()
    groups: dict[_Key, _Group] = {}
    listed: list[NodeSeen] = []
    for node in nodes:
        if node.node.isdigit():
            groups.setdefault(_key_of_node(node), _Group()).nodes.append(node)
        else:
            listed.append(node)
    for found in classes:
        groups.setdefault(_key_of_class(found), _Group()).classes.append(found)
    out: list[NodeClass] = []
    for key, group in groups.items():
        if group.count >= FOLD_FROM:
            out.append(_as_class(key, group))
        else:
            listed += group.nodes
            out += group.classes
    listed.sort(key=lambda n: (0, int(n.node), "") if n.node.isdigit() else (1, 0, n.node))
    out.sort(key=lambda c: c.nodes[0])
    return tuple(listed), tuple(out)


def covered(nodes: Sequence[NodeSeen], classes: Sequence[NodeClass]) -> Spans:
    """The numbered nodes the record accounts for, as ranges."""
    return union_ranges(
        [
            *(s for c in classes for s in c.nodes),
            *((int(n.node),) * 2 for n in nodes if n.node.isdigit()),
        ]
    )


def never_joined(
    nodes: Sequence[NodeSeen], classes: Sequence[NodeClass], expected: int
) -> tuple[list[NodeSeen], list[NodeClass]]:
    """The node numbers below `expected` that the record lacks (their hangdoctor never
    joined): a run of at least `FOLD_FROM` of them as one class, shorter runs node by node.
    Walks the ranges, not the nodes."""
    listed: list[NodeSeen] = []
    runs: list[NodeClass] = []
    at = 0
    for low, high in [*covered(nodes, classes), (expected, expected)]:
        stop = min(low, expected)
        if stop - at >= FOLD_FROM:
            runs.append(
                NodeClass(nodes=((at, stop - 1),), count=stop - at, joined=False, answered=False)
            )
        else:
            listed += (NodeSeen(node=str(i), joined=False) for i in range(at, stop))
        at = max(at, high + 1)
    return listed, runs


def node_spans(nodes: Spans, limit: int = 6) -> str:
    """`0-5460,5462-16383` (at most `limit` runs, then `,…`)."""
    return spans_text(nodes, limit)
