"""Alike nodes as one class with node ranges (issue 28): a view of 16,384 nodes lists the few
that differ, and the culprit's node is still named."""

from __future__ import annotations

from hangdoctor.evidence import build as b
from hangdoctor.evidence.model import Bundle, NodeClass, NodeSeen, NodesEvidence, ProcessEvidence
from hangdoctor.nodes.merge import PeerCapture, merge
from hangdoctor.nodes.node_classes import FOLD_FROM, fold, never_joined, node_shape
from hangdoctor.pipeline import Context, Mode, diagnose
from hangdoctor.report.render_markdown import render_markdown

_C10D = f"{b.SITE}/torch/distributed/distributed_c10d.py"


def _seen(node: int, shape: str | None = "alike", **fields: object) -> NodeSeen:
    values: dict[str, object] = {
        "node": str(node),
        "host": f"gpu{node:05d}",
        "ranks": (2 * node, 2 * node + 1),
        "answered": True,
        "shape": shape,
    }
    return NodeSeen.model_validate(values | fields)


def _in_blocks(nodes: list[NodeSeen], job_nodes: int) -> tuple[list[NodeSeen], list[NodeClass]]:
    """Folded as the merge tree folds them: blocks of 64, then 64 blocks, then the top."""
    views = [([n], list[NodeClass]()) for n in nodes]
    while len(views) > 1:
        merged = []
        for first in range(0, len(views), 64):
            block = views[first : first + 64]
            listed, classes = fold(
                [n for v in block for n in v[0]], [c for v in block for c in v[1]], job_nodes
            )
            merged.append((list(listed), list(classes)))
        views = merged
    return views[0]


def test_16384_alike_nodes_are_one_class_with_their_ranges_and_the_outliers_stay_listed() -> None:
    nodes = [_seen(n) for n in range(16_384)]
    nodes[100] = _seen(100, shape="straggler")
    nodes[5461] = _seen(5461, shape=None, answered=False, silent_s=40.0)
    nodes[9000] = _seen(9000, shape="other")
    listed, classes = _in_blocks(nodes, 16_384)
    assert [n.node for n in listed] == ["100", "5461", "9000"]
    assert len(classes) == 1
    (alike,) = classes
    assert alike.count == 16_381
    assert alike.nodes == ((0, 99), (101, 5460), (5462, 8999), (9001, 16383))
    assert (alike.host, alike.last_host) == ("gpu00000", "gpu16383")
    assert alike.ranks[0] == (0, 199) and alike.ranks[-1] == (18002, 32767)


def test_a_few_alike_outliers_stay_one_by_one_and_a_small_job_is_never_folded() -> None:
    odd = [_seen(n, shape="odd") for n in range(FOLD_FROM - 1)]
    listed, classes = fold(odd, [], 16_384)
    assert len(listed) == FOLD_FROM - 1 and classes == ()
    three = [_seen(n) for n in range(3)]
    assert fold(three, [], 3) == (tuple(three), ())


def test_nodes_that_never_joined_are_ranges_not_rows() -> None:
    present = [_seen(n) for n in range(1000)]
    listed, runs = never_joined(present, [], 16_384)
    assert listed == [] and [(r.nodes, r.joined) for r in runs] == [(((1000, 16383),), False)]
    gap = [_seen(n) for n in range(20) if n != 7]
    listed, runs = never_joined(gap, [], 20)
    assert [n.node for n in listed] == ["7"] and runs == []


def _rank(node: int, local: int, world: int, straggler: int) -> ProcessEvidence:
    rank = 2 * node + local
    if rank == straggler:
        frames = (
            b.frame(f"{b.STDLIB}/socket.py", 706, "SocketIO.readinto"),
            b.frame("data.py", 31, "fetch_shard", code="blob = sock.recv(1 << 20)"),
        )
        thread = b.thread(10 + local, *frames, name="MainThread", syscall="recvfrom", args=(9,))
    else:
        frames = (
            b.frame(_C10D, 2501, "all_reduce"),
            b.frame("train.py", 52, "train", code="dist.all_reduce(loss)"),
        )
        thread = b.thread(10 + local, *frames, name="MainThread", syscall="futex")
    env = {"RANK": str(rank), "WORLD_SIZE": str(world), "LOCAL_RANK": str(local)}
    env |= {"LOCAL_WORLD_SIZE": "2", "GROUP_RANK": str(node)}
    return b.process(10 + local, thread, ppid=1, env=env)


def _node(node: int, world: int, straggler: int) -> Bundle:
    launcher = b.process(
        1, b.thread(1, b.frame(f"{b.SITE}/torch/distributed/run.py", 900, "main")), ppid=0
    )
    return b.bundle(launcher, *(_rank(node, local, world, straggler) for local in (0, 1)))


def test_the_culprit_node_is_named_and_listed_among_a_class_of_alike_nodes() -> None:
    count, straggler = 256, 155  # rank 155 on node 77
    captures = [_node(n, 2 * count, straggler) for n in range(count)]
    views: list[Bundle] = []
    for first in range(0, count, 64):
        seen = [
            NodeSeen(
                node=str(n),
                host=f"gpu{n:05d}",
                ranks=(2 * n, 2 * n + 1),
                answered=True,
                shape=node_shape(captures[n]),
            )
            for n in range(first, first + 64)
        ]
        listed, classes = fold(seen, [], count)
        record = NodesEvidence(this_node=str(first), expected=count, nodes=listed, classes=classes)
        peers = [
            PeerCapture(str(n), f"gpu{n:05d}", captures[n]) for n in range(first + 1, first + 64)
        ]
        views.append(merge(captures[first], f"gpu{first:05d}", peers, record))
    listed, classes = fold(
        [n for v in views if v.nodes for n in v.nodes.nodes],
        [c for v in views if v.nodes for c in v.nodes.classes],
        count,
    )
    record = NodesEvidence(this_node="0", expected=count, nodes=listed, classes=classes)
    peers = [PeerCapture(str(64 * i), f"gpu{64 * i:05d}", v) for i, v in enumerate(views[1:], 1)]
    job = merge(views[0], "gpu00000", peers, record)
    assert job.nodes is not None and not job.nodes.partial
    assert [n.node for n in job.nodes.nodes] == ["77"]
    assert [(c.nodes, c.count) for c in job.nodes.classes] == [(((0, 76), (78, 255)), 255)]
    report = diagnose(job, Context(mode=Mode.HANG))
    culprit = report.findings[0].culprit
    assert culprit is not None and (culprit.rank, culprit.node) == (straggler, "77")
    text = render_markdown(report)
    assert "0-76,78-255 (255 nodes alike)" in text and "| 77 | gpu00077 |" in text


def test_a_node_whose_threads_share_a_name_with_and_without_python_has_a_shape() -> None:
    """A launcher's thread seen by py-spy beside one of the same name it did not see: their
    keys once failed to sort (None against a name), and the exchange lost the whole view."""
    seen = b.thread(2, b.frame("run.py", 1, "main"), name="torchrun")
    unseen = b.thread(3, name="torchrun", python=False)
    launcher = b.process(1, seen, unseen, ppid=0)
    assert node_shape(b.bundle(launcher)) is not None
