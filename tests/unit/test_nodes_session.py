"""The job-wide session on its real transports: a directory and PyTorch's TCPStore. Three nodes
(three sessions, each on its own thread as in three `hangdoctor run`s): one declares a hang,
the others hear of it within a second, and each collects everyone's evidence; a node that went
silent is not waited for, and is named."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import pytest

from hangdoctor.evidence import build as b
from hangdoctor.evidence.model import Bundle
from hangdoctor.nodes import exchange as exchange_module
from hangdoctor.nodes import session as session_module
from hangdoctor.nodes.board import Board, DirectoryBoard, StoreBoard
from hangdoctor.nodes.exchange import Me, TreeExchange
from hangdoctor.nodes.session import NodeSession, SessionPlan


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def _sessions(boards: list[Callable[[], Board]], expected: int) -> Iterator[list[NodeSession]]:
    def ranks_of(node: int) -> Callable[[], tuple[int, ...]]:
        return lambda: (2 * node, 2 * node + 1)

    sessions = [
        NodeSession(SessionPlan(str(i), f"host-{i}", expected, "test", opener), ranks_of(i))
        for i, opener in enumerate(boards)
    ]
    try:
        for s in sessions:
            s.start()
        deadline = time.monotonic() + 30
        while not all(s.connected for s in sessions) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert all(s.connected for s in sessions)
        time.sleep(session_module.BEAT_S + 0.5)  # every node has said it is alive
        yield sessions
    finally:
        for s in sessions:
            s.stop()


def _wait_for_peer_hang(node: NodeSession, limit_s: float = 3.0) -> tuple[int | None, float]:
    started = time.monotonic()
    while time.monotonic() - started < limit_s:
        epoch = node.peer_hang()
        if epoch is not None:
            return epoch, time.monotonic() - started
        time.sleep(0.02)
    return None, limit_s


def _capture(node: int) -> Bundle:
    """A node's capture: its two ranks, each a process with pid 100 (as in two containers)."""
    return b.bundle(
        *(
            b.process(100 + rank % 2, b.thread(100 + rank % 2), env={"RANK": str(rank)})
            for rank in (2 * node, 2 * node + 1)
        )
    )


def _whole_jobs(nodes: Sequence[NodeSession], epoch: int) -> dict[str, Bundle]:
    views: dict[str, Bundle] = {}

    def exchange(node: NodeSession) -> None:
        views[node.plan.me] = node.whole_job(epoch, _capture(int(node.plan.me)))

    threads = [threading.Thread(target=exchange, args=(n,)) for n in nodes]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    return views


def _ranks_by_node(view: Bundle) -> dict[str | None, list[str]]:
    found: dict[str | None, list[str]] = {}
    for process in view.snapshots[0].processes:
        found.setdefault(process.node, []).append(process.environ["RANK"])
    return {node: sorted(ranks) for node, ranks in found.items()}


def _a_hang_on_one_node_is_a_hang_on_all(boards: list[Callable[[], Board]]) -> None:
    with _sessions(boards, expected=3) as (zero, one, two):
        epoch = one.declare()
        assert epoch == 1
        for other in (zero, two):
            # How soon they hear is a figure of benchmarks/bench_session.py, not a gate here.
            seen, _after_s = _wait_for_peer_hang(other, limit_s=30.0)
            assert seen == epoch, "the other nodes hear of the hang"
            other.took(seen)
        assert one.peer_hang() is None  # its own hang is not news to it
        views = _whole_jobs((zero, one, two), epoch)
        assert sorted(views) == ["0", "1", "2"]
        for view in views.values():  # every node holds the whole job's view
            assert _ranks_by_node(view) == {"0": ["0", "1"], "1": ["2", "3"], "2": ["4", "5"]}
            assert view.nodes is not None and not view.nodes.partial
            assert [(n.node, n.host, n.ranks, n.answered) for n in view.nodes.nodes] == [
                ("0", "host-0", (0, 1), True),
                ("1", "host-1", (2, 3), True),
                ("2", "host-2", (4, 5), True),
            ]
        # the pids that met are told apart, each keeping its own
        pids = [p.pid for p in views["2"].snapshots[0].processes]
        assert len(set(pids)) == 6


def test_a_hang_on_one_node_is_a_hang_on_all_through_a_shared_directory(tmp_path: Path):
    _a_hang_on_one_node_is_a_hang_on_all([lambda: DirectoryBoard(tmp_path / "board")] * 3)


@pytest.mark.torch
def test_a_hang_on_one_node_is_a_hang_on_all_through_a_tcpstore():
    pytest.importorskip("torch")
    port = _free_port()
    hosted = StoreBoard("127.0.0.1", port, "job", serve=True)  # the job's own store
    try:
        _a_hang_on_one_node_is_a_hang_on_all(
            [lambda: StoreBoard("127.0.0.1", port, "job") for _ in range(3)]
        )
    finally:
        hosted.close()


def test_nodes_that_declare_at_once_agree_on_one_hang(tmp_path: Path):
    with _sessions([lambda: DirectoryBoard(tmp_path / "board")] * 2, expected=2) as (a, b):
        assert a.declare() == b.declare() == 1


def test_a_silent_node_is_not_waited_for_and_a_node_that_never_joined_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setattr(exchange_module, "SILENT_S", 2.0)
    monkeypatch.setattr(exchange_module, "EXCHANGE_S", 60.0)
    with _sessions([lambda: DirectoryBoard(tmp_path / "board")] * 2, expected=3) as (a, b):
        b.stop()  # its hangdoctor was killed: no more beats, no evidence
        time.sleep(2.5)
        epoch = a.declare()
        started = time.monotonic()
        view = a.whole_job(epoch, _capture(0))
        # Waiting for it would take the whole 60 s; half of that tells the two apart on any
        # machine, however loaded.
        assert time.monotonic() - started < 30, "a silent node is not waited for"
        assert _ranks_by_node(view) == {"0": ["0", "1"]}
        assert view.nodes is not None
        states = {n.node: (n.joined, n.answered) for n in view.nodes.nodes}
        assert states == {"0": (True, True), "1": (True, False), "2": (False, False)}
        silent = next(n for n in view.nodes.nodes if n.node == "1")
        assert silent.silent_s is not None and silent.silent_s >= 2
        assert view.nodes.partial


def test_an_unreachable_board_leaves_the_session_unconnected_and_the_job_alone():
    def unreachable() -> Board:
        raise ConnectionRefusedError("no store at 127.0.0.1:1")

    node = NodeSession(
        SessionPlan("0", "h", 2, "the job's TCPStore 127.0.0.1:1", unreachable), tuple
    )
    node.start()
    time.sleep(0.3)
    assert not node.connected and node.problem is not None and "127.0.0.1:1" in node.problem
    assert node.declare() == 1  # a local number: the hang is still this node's to report
    view = node.whole_job(1, _capture(0))
    assert _ranks_by_node(view) == {"0": ["0", "1"]}
    assert view.nodes is not None and view.nodes.transport is not None
    assert "not reached" in view.nodes.transport
    node.stop()


def test_when_the_merging_node_goes_silent_the_next_one_merges(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setattr(exchange_module, "SILENT_S", 2.0)
    monkeypatch.setattr(exchange_module, "EXCHANGE_S", 60.0)
    with _sessions([lambda: DirectoryBoard(tmp_path / "board")] * 2, expected=2) as (zero, one):
        zero.stop()
        time.sleep(2.5)
        started = time.monotonic()
        view = one.whole_job(1, _capture(1))
        assert time.monotonic() - started < 30, "it does not wait for a node that is gone"
        assert _ranks_by_node(view) == {"1": ["2", "3"]}
        assert view.nodes is not None and view.nodes.declared_by is None


class _CountingBoard(StoreBoard):
    """A real TCPStore board that counts what a node reads (issue 28: the session at scale)."""

    reads = 0

    def get(self, key: str) -> bytes | None:
        _CountingBoard.reads += 1
        return super().get(key)


@pytest.mark.torch
def test_at_a_thousand_nodes_a_node_reads_a_few_keys_to_know_whether_it_leads():
    """Each of a thousand nodes asks whether it leads its block of the merge tree: it reads the
    beat of its block's first node, not every node's, and the member list is read once, then
    only its new entries."""
    import json as json_module

    pytest.importorskip("torch")

    port = _free_port()
    host = StoreBoard("127.0.0.1", port, "scale", serve=True)
    try:
        for node in range(1000):
            host.join(str(node))
            beat = {"host": f"host-{node}", "ranks": [node], "at": time.time()}
            host.put(f"beat/{node}", json_module.dumps(beat).encode())
        board = _CountingBoard("127.0.0.1", port, "scale")
        assert len(board.members()) == 1000
        for name, leads in (("617", (False,)), ("640", (True, False)), ("0", (True, True))):
            me = Me(name, f"host-{name}", (int(name),), 1000, "test", declared=False)
            exchange = TreeExchange(board, me, epoch=1)
            exchange._place_members(board.members())
            _CountingBoard.reads = 0
            assert tuple(exchange.leads(level) for level in range(1, len(leads) + 1)) == leads
            assert _CountingBoard.reads <= 1, name  # its block's first node's beat, at most
        host.join("1000")
        _CountingBoard.reads = 0
        assert len(board.members()) == 1001 and _CountingBoard.reads == 1  # the new one only
    finally:
        host.close()


class _ReadsOfCaptures(DirectoryBoard):
    """A directory board that notes which captures and block views each node reads."""

    def __init__(self, directory: Path, log: set[str]) -> None:
        super().__init__(directory)
        self.log = log

    def get(self, key: str) -> bytes | None:
        value = super().get(key)
        if value is not None and key.split("/")[0] in ("evidence", "part"):
            self.log.add(key)
        return value


def test_a_merge_tree_gives_every_node_the_whole_job_and_replaces_a_silent_leader(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """Seven nodes, blocks of two: three levels. Node 2, which would lead its block, is gone:
    node 3 leads it instead. Every node ends with one view of the six that answered, and no
    node reads more than one capture or view a level (the blocks hold two)."""
    monkeypatch.setattr(exchange_module, "EXCHANGE_S", 60.0)
    root = tmp_path / "board"
    setup = DirectoryBoard(root)
    for node in range(7):
        setup.join(str(node))
        if node != 2:
            beat = {"host": f"host-{node}", "ranks": [2 * node, 2 * node + 1], "at": 1e12}
            setup.put(f"beat/{node}", json.dumps(beat).encode())
    reads: dict[str, set[str]] = {}
    views: dict[str, Bundle] = {}

    def run(node: int) -> None:
        log = reads.setdefault(str(node), set())
        me = Me(str(node), f"host-{node}", (2 * node, 2 * node + 1), 7, "test", node == 5)
        exchange = TreeExchange(_ReadsOfCaptures(root, log), me, epoch=1, fan_in=2)
        views[str(node)] = exchange.whole_job(_capture(node))

    started = time.monotonic()
    threads = [threading.Thread(target=run, args=(n,)) for n in range(7) if n != 2]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert time.monotonic() - started < 30, "the silent leader is not waited for"
    whole = {str(n): [str(2 * n), str(2 * n + 1)] for n in range(7) if n != 2}
    for name, view in views.items():
        assert _ranks_by_node(view) == whole, name
        assert view.nodes is not None
        states = {n.node: n.answered for n in view.nodes.nodes}
        assert states == {str(n): n != 2 for n in range(7)}, name
        assert view.nodes.declared_by == "5"
        assert sum(e.kind == "partial" for e in view.errors) == 1  # said once, at the top
    for name, log in reads.items():
        assert len(log) <= 3, (name, sorted(log))  # one a level, three levels
    assert "part/1/1/1" in reads["0"] or "part/1/2/0" in reads["0"]
