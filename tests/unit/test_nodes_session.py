"""The job-wide session on its real transports: a directory and PyTorch's TCPStore. Three nodes
(three sessions, each on its own thread as in three `hangdoctor run`s): one declares a hang,
the others hear of it within a second, and each collects everyone's evidence; a node that went
silent is not waited for, and is named."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from hangdoctor.nodes import session as session_module
from hangdoctor.nodes.board import Board, DirectoryBoard, StoreBoard
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


def _a_hang_on_one_node_is_a_hang_on_all(boards: list[Callable[[], Board]]) -> None:
    with _sessions(boards, expected=3) as (zero, one, two):
        epoch = one.declare()
        assert epoch == 1
        for other in (zero, two):
            seen, after_s = _wait_for_peer_hang(other)
            assert seen == epoch, "the other nodes hear of the hang"
            assert after_s < 1.5
            other.took(seen)
        assert one.peer_hang() is None  # its own hang is not news to it
        results = {}
        import threading

        def exchange(node: NodeSession) -> None:
            results[node.plan.me] = node.exchange(epoch, f"capture of {node.plan.me}".encode(), 10)

        threads = [threading.Thread(target=exchange, args=(n,)) for n in (zero, one, two)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(15)
        received, nodes = results["2"]
        assert received == {"0": b"capture of 0", "1": b"capture of 1"}
        assert [(n.node, n.host, n.ranks, n.answered) for n in nodes.nodes] == [
            ("0", "host-0", (0, 1), True),
            ("1", "host-1", (2, 3), True),
            ("2", "host-2", (4, 5), True),
        ]
        assert not nodes.partial
        # Node 0 merges; the others take its merged view instead of merging themselves.
        assert zero.merges() and not one.merges() and not two.merges()
        zero.publish(epoch, b"the whole job")
        assert two.await_merged(epoch, wait_s=2) == b"the whole job"


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
    monkeypatch.setattr(session_module, "SILENT_S", 2.0)
    with _sessions([lambda: DirectoryBoard(tmp_path / "board")] * 2, expected=3) as (a, b):
        b.stop()  # its hangdoctor was killed: no more beats, no evidence
        time.sleep(2.5)
        epoch = a.declare()
        started = time.monotonic()
        received, nodes = a.exchange(epoch, b"mine", wait_s=60)
        # Waiting for it would take the whole 60 s; half of that tells the two apart on any
        # machine, however loaded.
        assert time.monotonic() - started < 30, "a silent node is not waited for"
        assert received == {}
        states = {n.node: (n.joined, n.answered) for n in nodes.nodes}
        assert states == {"0": (True, True), "1": (True, False), "2": (False, False)}
        silent = next(n for n in nodes.nodes if n.node == "1")
        assert silent.silent_s is not None and silent.silent_s >= 2
        assert nodes.partial


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
    received, nodes = node.exchange(1, b"x", wait_s=1)
    assert received == {} and nodes.transport is not None and "not reached" in nodes.transport
    node.stop()


def test_when_the_merging_node_goes_silent_the_next_one_merges(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setattr(session_module, "SILENT_S", 2.0)
    with _sessions([lambda: DirectoryBoard(tmp_path / "board")] * 2, expected=2) as (zero, one):
        assert not one.merges()
        zero.stop()
        time.sleep(2.5)
        started = time.monotonic()
        assert one.await_merged(1, wait_s=60) is None
        assert time.monotonic() - started < 30, "it does not wait for a node that is gone"
        assert one.merges()


class _CountingBoard(StoreBoard):
    """A real TCPStore board that counts what a node reads (issue 28: the session at scale)."""

    reads = 0

    def get(self, key: str) -> bytes | None:
        _CountingBoard.reads += 1
        return super().get(key)


@pytest.mark.torch
def test_at_a_thousand_nodes_a_node_reads_a_few_keys_to_know_who_merges():
    """Each of a thousand nodes asks every quarter second whether it merges: it reads node 0's
    beat, not every node's, and the member list is read once, then only its new entries."""
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
        plan = SessionPlan("617", "host-617", 1000, "test", lambda: board)
        session = NodeSession(plan, lambda: (617,))
        session._board = board  # as the session's thread leaves it once it joined
        assert len(board.members()) == 1000
        _CountingBoard.reads = 0
        assert not session.merges()
        assert _CountingBoard.reads <= 2  # node 0's beat (and nothing more)
        host.join("1000")
        _CountingBoard.reads = 0
        assert len(board.members()) == 1001 and _CountingBoard.reads == 1  # the new one only
    finally:
        host.close()
