"""The job-wide session: every node's `hangdoctor run` joins one board (`board.py`), says it is
alive, and watches for a hang that any node declares, so that all of them capture at the same
moment and each diagnoses the whole job from everyone's evidence.

On the board, node N writes only its own keys:
- `member/...` once (the board's `join`), `beat/N` every second: its host, ranks, the time;
- `epoch`: the job-wide hang number, moved on by whichever node declares a hang first (an
  atomic compare-and-set, so nodes that declare at the same moment agree on one hang);
- `evidence/E/N`: its packed capture for hang E (`compact.pack`).

- `merged/E`: the whole job's view of hang E, left by the node that merges (the first node
  still alive: node 0, normally), which every other node takes instead of fetching everyone's
  evidence itself: each node's capture travels once to the merging node, and the merged view
  once to each node.

The session's thread does all the waiting on the network; the supervisor's loop only reads
flags (`peer_hang`), and blocks only at a hang, in calls that have a deadline."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from hangdoctor.evidence.model import NodeSeen, NodesEvidence
from hangdoctor.i18n import _
from hangdoctor.nodes.board import Board

#: How often a node says it is alive, and after how long without a word it counts as gone.
BEAT_S = 1.0
SILENT_S = 6.0
#: How often the thread looks for a hang declared elsewhere.
POLL_S = 0.25
#: How long a node waits for the others' evidence at a hang.
EXCHANGE_S = 20.0
#: Between tries to reach the board while it is not there yet (the job's store starts with it).
CONNECT_RETRY_S = 1.0


@dataclass(frozen=True)
class SessionPlan:
    """Who this node is and how to reach the others."""

    me: str  # node rank, else host name
    host: str
    expected: int | None  # nodes the launcher asked for
    transport: str  # for the report: "the job's TCPStore at HOST:PORT", "directory ..."
    open_board: Callable[[], Board]  # may block and raise; called on the session's thread
    report_dir: Path | None = None  # where this node writes its report, when not the one given


@dataclass(frozen=True)
class _Beat:
    host: str | None
    ranks: tuple[int, ...]
    at: float


class NodeSession:
    """One node's part in the job-wide session (see the module's docstring)."""

    def __init__(self, plan: SessionPlan, ranks: Callable[[], tuple[int, ...]]) -> None:
        self.plan = plan
        self._ranks = ranks
        self._board: Board | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._connected = threading.Event()
        self._handled = 0  # the last hang epoch this node captured
        self._seen_epoch = 0
        self._declared_here: set[int] = set()
        self._pending_peer: int | None = None
        self._thread = threading.Thread(target=self._run, name="hangdoctor-nodes", daemon=True)
        self.problem: str | None = None  # why the board could not be reached, for the report

    # lifecycle -------------------------------------------------------------------------------
    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2.0)
        board, self._board = self._board, None
        if board is not None:
            with contextlib.suppress(Exception):
                board.close()

    @property
    def connected(self) -> bool:
        return self._connected.is_set()

    # what the supervisor's loop asks ----------------------------------------------------------
    def peer_hang(self) -> int | None:
        """A hang epoch another node declared that this node has not captured yet; None
        otherwise. Non-blocking."""
        with self._lock:
            epoch, self._pending_peer = self._pending_peer, None
        return epoch if epoch is not None and epoch > self._handled else None

    def declare(self, timeout_s: float = 2.0) -> int:
        """Announce a hang this node saw; returns the job-wide epoch it belongs to (the one a
        peer declared at the same moment, if it did). Bounded: without the board, a local
        number."""
        board = self._board
        epoch = max(self._handled, self._seen_epoch) + 1
        if board is not None:
            done: list[int] = []
            worker = threading.Thread(
                target=lambda: done.append(_raise_epoch(board, self._handled)), daemon=True
            )
            worker.start()
            worker.join(timeout_s)
            if done:
                epoch = done[0]
        self._declared_here.add(epoch)
        self._handled = max(self._handled, epoch)
        return epoch

    def took(self, epoch: int) -> None:
        """This node is capturing hang `epoch` (declared elsewhere)."""
        self._handled = max(self._handled, epoch)

    def send(self, epoch: int, packed: bytes) -> None:
        """Leave this node's packed capture of hang `epoch` on the board."""
        board = self._board
        if board is not None:
            with contextlib.suppress(Exception):
                board.put(f"evidence/{epoch}/{self.plan.me}", packed)

    def merges(self) -> bool:
        """Whether this node is the one that merges: the first, in node order, of the nodes
        still alive (node 0, unless it has gone silent)."""
        board = self._board
        if board is None:
            return True
        me = _node_order(self.plan.me)
        try:
            # Only the nodes before this one matter, the first of them alive settles it: one
            # read of node 0's beat, normally, however many nodes the job has.
            before = sorted((m for m in board.members() if _node_order(m) < me), key=_node_order)
            now = time.time()
            for member in before:
                beat = _read_beat(board, member)
                if beat is not None and now - beat.at < SILENT_S:
                    return False
        except Exception:
            return True
        return True

    def gather(
        self, epoch: int, wait_s: float = EXCHANGE_S
    ) -> tuple[dict[str, bytes], NodesEvidence]:
        """The other nodes' packed captures of hang `epoch`, waiting until every node that is
        alive has sent its own (at most `wait_s`), and what was seen of every node."""
        board = self._board
        received: dict[str, bytes] = {}
        beats: dict[str, _Beat] = {}
        members: list[str] = []
        deadline = time.monotonic() + wait_s
        while board is not None:
            with contextlib.suppress(Exception):
                members = [m for m in board.members() if m != self.plan.me]
                for member in members:
                    if member not in received:
                        value = board.get(f"evidence/{epoch}/{member}")
                        if value is not None:
                            received[member] = value
                # a beat is read again only while its node's evidence is awaited
                for member in members:
                    if member not in received or member not in beats:
                        beat = _read_beat(board, member)
                        if beat is not None:
                            beats[member] = beat
            now = time.time()
            alive = [m for m in members if m in beats and now - beats[m].at < SILENT_S]
            if all(m in received for m in alive) or time.monotonic() >= deadline:
                break
            time.sleep(POLL_S)
        return received, self._evidence(epoch, members, beats, received)

    def exchange(
        self, epoch: int, packed: bytes, wait_s: float = EXCHANGE_S
    ) -> tuple[dict[str, bytes], NodesEvidence]:
        """`send`, then `gather`."""
        self.send(epoch, packed)
        return self.gather(epoch, wait_s)

    def publish(self, epoch: int, merged: bytes) -> None:
        """Leave the whole job's merged view of hang `epoch` for the other nodes."""
        board = self._board
        if board is not None:
            with contextlib.suppress(Exception):
                board.put(f"merged/{epoch}", merged)

    def await_merged(self, epoch: int, wait_s: float = EXCHANGE_S + 10.0) -> bytes | None:
        """The merged view of hang `epoch` once the merging node has left it; None after
        `wait_s`, or as soon as no node is left to merge (this node then merges itself)."""
        board = self._board
        deadline = time.monotonic() + wait_s
        while board is not None and time.monotonic() < deadline:
            try:
                value = board.get(f"merged/{epoch}")
            except Exception:
                return None
            if value is not None:
                return value
            if self.merges():
                return None  # the node that would have merged went silent
            time.sleep(POLL_S)
        return None

    def finish(self, epoch: int, wait_s: float = 5.0) -> None:
        """Say this node has what it needs of hang `epoch`, and wait (at most `wait_s`) until
        every node that sent evidence says so too: a node that ends its ranks (and with them,
        perhaps, the job's store) must not cut the others off mid-exchange."""
        board = self._board
        if board is None:
            return
        deadline = time.monotonic() + wait_s
        with contextlib.suppress(Exception):
            board.put(f"done/{epoch}/{self.plan.me}", b"1")
        while time.monotonic() < deadline:
            try:
                waiting = [
                    m
                    for m in board.members()
                    if m != self.plan.me
                    and board.get(f"evidence/{epoch}/{m}") is not None
                    and board.get(f"done/{epoch}/{m}") is None
                ]
            except Exception:
                return
            if not waiting:
                return
            time.sleep(POLL_S)

    # the thread -------------------------------------------------------------------------------
    def _run(self) -> None:
        board = self._connect()
        if board is None:
            return
        next_beat = 0.0
        while not self._stop.is_set():
            now = time.monotonic()
            with contextlib.suppress(Exception):
                if now >= next_beat:
                    beat = {"host": self.plan.host, "ranks": list(self._ranks()), "at": time.time()}
                    board.put(f"beat/{self.plan.me}", json.dumps(beat).encode())
                    next_beat = now + BEAT_S
                epoch = _epoch(board)
                if epoch > self._seen_epoch:
                    self._seen_epoch = epoch
                    if epoch > self._handled and epoch not in self._declared_here:
                        with self._lock:
                            self._pending_peer = epoch
            self._stop.wait(POLL_S)

    def _connect(self) -> Board | None:
        while not self._stop.is_set():
            try:
                board = self.plan.open_board()
                board.join(self.plan.me)
            except Exception as error:  # not there yet (the job's store), or unreachable
                self.problem = f"{self.plan.transport}: {type(error).__name__}: {error}"
                self._stop.wait(CONNECT_RETRY_S)
                continue
            self._board = board
            self.problem = None
            self._connected.set()
            return board
        return None

    def _evidence(
        self, epoch: int, members: list[str], beats: dict[str, _Beat], received: dict[str, bytes]
    ) -> NodesEvidence:
        now = time.time()
        seen = [
            NodeSeen(
                node=self.plan.me,
                host=self.plan.host,
                ranks=tuple(sorted(self._ranks())),
                answered=True,
                silent_s=0.0,
            )
        ]
        for member in sorted(members, key=_node_order):
            beat = beats.get(member)
            seen.append(
                NodeSeen(
                    node=member,
                    host=beat.host if beat else None,
                    ranks=beat.ranks if beat else (),
                    answered=member in received,
                    silent_s=round(now - beat.at, 1) if beat else None,
                )
            )
        expected = self.plan.expected
        if expected is not None and all(n.node.isdigit() for n in seen):
            known = {n.node for n in seen}
            seen += [
                NodeSeen(node=str(i), joined=False) for i in range(expected) if str(i) not in known
            ]
        return NodesEvidence(
            this_node=self.plan.me,
            expected=expected,
            nodes=tuple(sorted(seen, key=lambda n: _node_order(n.node))),
            declared_by=self.plan.me if epoch in self._declared_here else None,
            transport=self.plan.transport
            if self._board is not None
            else _(
                "{transport} (not reached: {problem})",
                transport=self.plan.transport,
                problem=self.problem,
            ),
        )


def _node_order(node: str) -> tuple[int, int | str]:
    return (0, int(node)) if node.isdigit() else (1, node)


def _epoch(board: Board) -> int:
    value = board.get("epoch")
    try:
        return int(value) if value else 0
    except ValueError:
        return 0


def _raise_epoch(board: Board, handled: int) -> int:
    """Move the job-wide epoch past `handled` unless a peer already did; the epoch in force."""
    current = _epoch(board)
    if current > handled:
        return current
    after = board.compare_set("epoch", str(current) if current else "", str(current + 1))
    try:
        return int(after)
    except ValueError:
        return current + 1


def _read_beat(board: Board, member: str) -> _Beat | None:
    value = board.get(f"beat/{member}")
    if value is None:
        return None
    try:
        data = json.loads(value)
        return _Beat(
            host=data.get("host"),
            ranks=tuple(int(r) for r in data.get("ranks", ())),
            at=float(data["at"]),
        )
    except (ValueError, KeyError, TypeError):
        return None
