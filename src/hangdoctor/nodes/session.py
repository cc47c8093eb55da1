"""The job-wide session: every node's `hangdoctor run` joins one board (`board.py`), says it is
alive, and watches for a hang that any node declares, so that all of them capture at the same
moment and each diagnoses the whole job from everyone's evidence.

On the board, node N writes only its own keys:
- `member/...` once (the board's `join`), `beat/N` every second: its host, ranks, the time;
- `epoch`: the job-wide hang number, moved on by whichever node declares a hang first (an
  atomic compare-and-set, so nodes that declare at the same moment agree on one hang), and
  `hang/E` then, the key the others watch: whether the next hang's key exists is one request,
  where reading the number was two once it existed; nobody watches during an exchange;
- at a hang, its capture, and the views of the blocks of nodes it leads in the merge tree
  (`exchange`, `tree`): each node's capture travels once to its block's leader, no node reads
  more than 64 captures or views, and the whole job's view (`merged/E`) once to each node.

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

from hangdoctor.evidence.model import Bundle
from hangdoctor.nodes.board import Board
from hangdoctor.nodes.exchange import POLL_S, Me, TreeExchange, own_view

#: How often a node says it is alive (after `exchange.SILENT_S` without a word it is gone).
BEAT_S = 1.0
#: How often a node looks for a hang another declared: one store request a look (whether
#: `hang/E+1` exists), so a thousand nodes make two thousand a second, not four thousand; a
#: hang is heard of within half a second, inside the second the captures may spread over.
WATCH_S = 0.5
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
        self._exchanging = threading.Event()  # no watching for the next hang meanwhile
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
                target=lambda: done.append(_raise_epoch(board, self._handled, self.plan.me)),
                daemon=True,
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

    def whole_job(self, epoch: int, bundle: Bundle) -> Bundle:
        """This node's capture of hang `epoch` sent, the whole job's view (`exchange`); this
        node's alone where the board cannot be reached."""
        me = Me(
            node=self.plan.me,
            host=self.plan.host,
            ranks=tuple(self._ranks()),
            expected=self.plan.expected,
            transport=self.plan.transport,
            declared=epoch in self._declared_here,
        )
        board = self._board
        if board is None:
            return own_view(bundle, me, self.problem)
        self._exchanging.set()
        try:
            return TreeExchange(board, me, epoch).whole_job(bundle)
        except Exception as error:  # the board went away mid-exchange
            return own_view(bundle, me, f"{type(error).__name__}: {error}")
        finally:
            self._exchanging.clear()

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
        next_beat = next_watch = 0.0
        with contextlib.suppress(Exception):
            self._heard(_epoch(board))  # a hang declared before this node joined
        while not self._stop.is_set():
            now = time.monotonic()
            with contextlib.suppress(Exception):
                if now >= next_beat:
                    next_beat = now + BEAT_S
                    beat = {"host": self.plan.host, "ranks": list(self._ranks()), "at": time.time()}
                    board.put(f"beat/{self.plan.me}", json.dumps(beat).encode())
                if now >= next_watch:
                    next_watch = now + WATCH_S
                    while (
                        not self._exchanging.is_set()
                        and board.get(f"hang/{self._seen_epoch + 1}") is not None
                    ):
                        self._heard(self._seen_epoch + 1)
            self._stop.wait(max(0.01, min(next_beat, next_watch) - time.monotonic()))

    def _heard(self, epoch: int) -> None:
        """Hang `epoch` is declared on the board: a peer's, unless this node declared it."""
        if epoch > self._seen_epoch:
            self._seen_epoch = epoch
            if epoch > self._handled and epoch not in self._declared_here:
                with self._lock:
                    self._pending_peer = epoch

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


def _epoch(board: Board) -> int:
    value = board.get("epoch")
    try:
        return int(value) if value else 0
    except ValueError:
        return 0


def _raise_epoch(board: Board, handled: int, me: str) -> int:
    """Move the job-wide epoch past `handled` unless a peer already did, and say so where the
    others watch (`hang/E`); the epoch in force."""
    current = _epoch(board)
    if current > handled:
        return current
    after = board.compare_set("epoch", str(current) if current else "", str(current + 1))
    try:
        epoch = int(after)
    except ValueError:
        epoch = current + 1
    board.put(f"hang/{epoch}", me.encode())
    return epoch
