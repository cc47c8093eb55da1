"""A job of two nodes seen as one: each node's capture merged (pids of the two nodes collide, as
they do in containers), the cross-rank rules run on all ranks, and the culprit named with its
node, host and the pid it has there."""

from __future__ import annotations

from hangdoctor.evidence import build as b
from hangdoctor.evidence.model import Bundle, Frame, NodeSeen, NodesEvidence, ProcessEvidence
from hangdoctor.nodes.compact import pack, unpack
from hangdoctor.nodes.merge import PID_SPACE, PeerCapture, merge
from hangdoctor.pipeline import Context, Mode, diagnose
from hangdoctor.report.render_markdown import render_markdown

WORLD = 4


def collective_frames(
    call: str, line: int, code: str, guards: tuple[str, ...] = ()
) -> tuple[Frame, Frame]:
    """A rank inside torch.distributed's `call`, from `code` at train.py:`line`."""
    return (
        b.frame(f"{b.SITE}/torch/distributed/distributed_c10d.py", 2500, call),
        b.frame("train.py", line, "train", code=code, guards=guards),
    )


def _rank(rank: int, pid: int, *, barrier: bool = False) -> ProcessEvidence:
    frames = (
        collective_frames("barrier", 47, "dist.barrier()", guards=(f"rank == {rank}",))
        if barrier
        else collective_frames("all_reduce", 50, "dist.all_reduce(loss)")
    )
    return b.process(
        pid,
        b.thread(pid, *frames, name="MainThread", syscall="futex"),
        ppid=99,
        env={
            "RANK": str(rank),
            "WORLD_SIZE": str(WORLD),
            "LOCAL_RANK": str(rank % 2),
            "LOCAL_WORLD_SIZE": "2",
            "GROUP_RANK": str(rank // 2),
        },
    )


def _node(first_rank: int, odd_rank: int | None = None) -> Bundle:
    launcher = b.process(
        99,
        b.thread(99, b.frame(f"{b.SITE}/torch/distributed/run.py", 900, "main")),
        ppid=1,
        cmdline=("torchrun", "--nnodes", "2", "train.py"),
    )
    ranks = [_rank(r, 100 + r % 2, barrier=r == odd_rank) for r in (first_rank, first_rank + 1)]
    return b.bundle(launcher, *ranks)


def _nodes(answered: tuple[str, ...] = ("0", "1")) -> NodesEvidence:
    return NodesEvidence(
        this_node="0",
        expected=2,
        nodes=tuple(
            NodeSeen(
                node=n, host=f"gpu-{n}", ranks=(2 * int(n), 2 * int(n) + 1), answered=n in answered
            )
            for n in ("0", "1")
        ),
        transport="the job's TCPStore 10.0.0.1:29500",
    )


def test_colliding_pids_are_renumbered_and_keep_their_own():
    merged = merge(_node(0), "gpu-0", [PeerCapture("1", "gpu-1", _node(2))], _nodes())
    processes = merged.snapshots[0].processes
    assert len(processes) == 6
    pids = [p.pid for p in processes]
    assert len(set(pids)) == 6
    peer = [p for p in processes if p.node == "1"]
    assert {p.host_pid for p in peer} == {99, 100, 101}
    assert all(p.pid > PID_SPACE for p in peer)
    # The peer's ranks still have their own launcher as parent.
    launcher = next(p for p in peer if p.host_pid == 99)
    assert {p.ppid for p in peer if p.host_pid != 99} == {launcher.pid}


def test_the_culprit_on_the_other_node_is_named_with_its_node_host_and_pid():
    """Rank 3, on node 1, alone entered a barrier; the other three wait in all_reduce."""
    merged = merge(_node(0), "gpu-0", [PeerCapture("1", "gpu-1", _node(2, odd_rank=3))], _nodes())
    report = diagnose(merged, Context(mode=Mode.HANG))
    root = report.root_cause
    assert root is not None and root.category == "distributed.collective_mismatch"
    assert root.culprit is not None
    assert (root.culprit.rank, root.culprit.node, root.culprit.host) == (3, "1", "gpu-1")
    assert root.culprit.pid == 101  # its pid on gpu-1, not the merged view's number
    assert root.culprit.location is not None and root.culprit.location.line == 47
    text = render_markdown(report)
    assert "node 1 (gpu-1), rank 3, pid 101" in text
    assert "## Nodes" in text and "| 1 | gpu-1 | 2, 3 | yes |" in text


def test_a_node_that_sent_nothing_makes_the_view_partial_and_its_ranks_unseen_not_exited():
    nodes = _nodes(answered=("0",))
    merged = merge(_node(0), "gpu-0", [], nodes)
    assert nodes.partial
    assert any(e.kind == "partial" and "node 1" in e.message for e in merged.errors)
    report = diagnose(merged, Context(mode=Mode.HANG))
    root = report.root_cause
    assert root is not None
    assert root.category != "distributed.rank_exited"
    assert "ranks 2-3" in root.title and "node 1 (gpu-1)" in root.title
    assert "partial view" in render_markdown(report).lower()


def test_a_packed_capture_comes_back_as_the_same_evidence():
    node = _node(2, odd_rank=3)
    back = unpack(pack(node))
    assert [p.pid for p in back.snapshots[0].processes] == [
        p.pid for p in node.snapshots[0].processes
    ]
    frames = back.snapshots[0].processes[2].threads[0].python
    assert frames is not None and frames.frames[-1].line == 47


def test_something_that_is_not_a_packed_capture_is_refused():
    import pytest

    with pytest.raises(ValueError):
        unpack(b"not zlib at all")
