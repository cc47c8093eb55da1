"""A hang's exchange of captures up the merge tree (`nodes.tree`), over the session's board.

On the board, for hang E:
- `evidence/E/N`: node N's packed capture (level 0), left by every node;
- `declared/E`: the node that declared the hang, left by that node;
- `part/E/L/B`: the merged view of block B at level L, left by its leader for the level above;
- `merged/E`: the whole job's view, left by the leader of the top block (node 0, normally),
  which every other node takes instead of merging anything itself.

A leader waits for the blocks below it until each that has a node alive has answered, or until
its level's deadline: each level waits `LEVEL_GRACE_S` longer than the one below, so a late
block reaches the top. Every read may block on the network; the supervisor calls this at a hang
only, on its own thread, and every wait has a deadline."""

from __future__ import annotations

import bisect
import contextlib
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass

from hangdoctor.evidence.model import Bundle, NodeClass, NodeSeen, NodesEvidence
from hangdoctor.nodes.board import Board
from hangdoctor.nodes.compact import pack, unpack
from hangdoctor.nodes.merge import PeerCapture, merge
from hangdoctor.nodes.node_classes import LISTED_NODES, fold, never_joined, node_shape
from hangdoctor.nodes.tree import (
    FAN_IN,
    block,
    block_places,
    first_alive,
    levels,
    node_order,
    places,
    sub_blocks,
)

#: How often a leader looks again for the captures or views it waits for.
POLL_S = 0.25
#: How often a node that leads nothing (most of them) looks for the job's view. Each look is a
#: store request: a thousand nodes looking every quarter second kept a store on 2 cores busy.
FOLLOW_S = 0.5
#: Arrivals at a leader stalled this long: it asks whether the blocks it still awaits are alive.
STALL_S = 1.0
#: How long a node's beat, once read, is taken as it was: whether a leader is alive is asked
#: at every look, and a read each time cost two requests of every waiting node.
BEAT_FRESH_S = 2.0
#: How long after its last beat a node counts as gone.
SILENT_S = 6.0
#: How long the first level waits for the captures of nodes that are alive.
EXCHANGE_S = 20.0
#: How much longer each level above waits than the one below it.
LEVEL_GRACE_S = 2.0
#: How much longer than the top leader a node waits for the job's view before using its own.
MERGED_GRACE_S = 10.0


@dataclass(frozen=True)
class Beat:
    """What a node last said of itself on the board (`beat/N`)."""

    host: str | None
    ranks: tuple[int, ...]
    at: float


def read_beat(board: Board, member: str) -> Beat | None:
    value = board.get(f"beat/{member}")
    if value is None:
        return None
    try:
        data = json.loads(value)
        return Beat(
            host=data.get("host"),
            ranks=tuple(int(r) for r in data.get("ranks", ())),
            at=float(data["at"]),
        )
    except (ValueError, KeyError, TypeError):
        return None


@dataclass(frozen=True)
class Me:
    """This node, as the exchange needs it."""

    node: str
    host: str
    ranks: tuple[int, ...]
    expected: int | None
    transport: str
    declared: bool  # this node declared the hang


class TreeExchange:
    """One node's part in the exchange of hang `epoch` (see the module's docstring)."""

    def __init__(
        self,
        board: Board,
        me: Me,
        epoch: int,
        fan_in: int = FAN_IN,
        wait_s: float | None = None,
    ) -> None:
        self.board = board
        self.me = me
        self.epoch = epoch
        self.fan_in = fan_in
        self.wait_s = EXCHANGE_S if wait_s is None else wait_s
        # member -> its beat, when it was read (monotonic), the wall clock then
        self._beats: dict[str, tuple[Beat | None, float, float]] = {}
        self._places: list[int] = []
        self._member_at: dict[int, str] = {}
        self._place = 0
        self._started = time.monotonic()

    # what the supervisor calls ---------------------------------------------------------------
    def whole_job(self, bundle: Bundle) -> Bundle:
        """This node's capture sent; the whole job's view, merged here where this node leads
        (the top block's leader publishes it) or taken from the board."""
        self._place_members([*self._members(), self.me.node])
        top = levels(max(self._size(), 2), self.fan_in)
        if self.me.declared:  # before its capture: the top has it once it has the capture
            self.board.put(f"declared/{self.epoch}", self.me.node.encode())
        self.board.put(f"evidence/{self.epoch}/{self.me.node}", pack(bundle))
        self._arrived(1)
        view, level = bundle, 0
        give_up = self._deadline(top) + MERGED_GRACE_S
        while True:
            while level < top and self.leads(level + 1):
                level += 1
                view = self._merge_level(level, view)
                key = f"merged/{self.epoch}" if level == top else self._part_key(level)
                self.board.put(key, pack(view))
                if level < top:
                    self._arrived(level + 1)
            if level == top:
                return view
            with contextlib.suppress(ValueError):
                value = self.board.get(f"merged/{self.epoch}")
                if value is not None:
                    return unpack(value)
            if time.monotonic() >= give_up:
                return view
            time.sleep(FOLLOW_S)

    # who leads -------------------------------------------------------------------------------
    def _members(self) -> list[str]:
        """The job's nodes: where they are numbered and their number known, 0 to N-1 without a
        read (a node that never joined is then one whose beat is never seen); else the
        board's member list (each node reading every member's key would cost the store N^2
        reads in a job of N nodes)."""
        expected = self.me.expected
        if expected is not None and self.me.node.isdigit() and int(self.me.node) < expected:
            return [str(i) for i in range(expected)]
        return self.board.members()

    def _place_members(self, members: Sequence[str]) -> None:
        by_place = places(members)
        self._member_at = {place: member for member, place in by_place.items()}
        self._places = sorted(self._member_at)
        self._place = by_place[self.me.node]

    def _size(self) -> int:
        return max(self._places[-1] + 1, self.me.expected or 0)

    def _members_in(self, places_range: range) -> list[str]:
        """The members whose places fall in `places_range`, in place order."""
        low = bisect.bisect_left(self._places, places_range.start)
        high = bisect.bisect_left(self._places, places_range.stop)
        return [self._member_at[place] for place in self._places[low:high]]

    def leads(self, level: int) -> bool:
        """Whether no node before this one in its block at `level` is alive."""
        index = block(self._place, level, self.fan_in)
        before = self._members_in(range(block_places(index, level, self.fan_in).start, self._place))
        return first_alive(before, self._alive) is None

    def _beat(self, member: str) -> Beat | None:
        known = self._beats.get(member)
        if known is not None and time.monotonic() - known[1] < BEAT_FRESH_S:
            return known[0]
        beat = None
        with contextlib.suppress(Exception):
            beat = read_beat(self.board, member)
        self._beats[member] = (beat, time.monotonic(), time.time())
        return beat

    def _alive(self, member: str) -> bool:
        """Whether the member's beat was fresh when it was last read (at most `BEAT_FRESH_S`
        ago): the age is taken at the read, so a cached beat does not age into silence."""
        if member == self.me.node:
            return True
        beat = self._beat(member)
        return beat is not None and self._beats[member][2] - beat.at < SILENT_S

    # merging a level -------------------------------------------------------------------------
    def _deadline(self, level: int) -> float:
        return self._started + self.wait_s + (level - 1) * LEVEL_GRACE_S

    def _part_key(self, level: int, index: int | None = None) -> str:
        index = block(self._place, level, self.fan_in) if index is None else index
        return f"part/{self.epoch}/{level}/{index}"

    def _below_key(self, level: int, index: int) -> str:
        """Where the block `index` of the level below `level` leaves its view."""
        if level == 1:
            return f"evidence/{self.epoch}/{self._member_at[index]}"
        return self._part_key(level - 1, index)

    def _merge_level(self, level: int, view: Bundle) -> Bundle:
        """`view` (this node's block one level down) merged with the other blocks of this
        node's block at `level`, waiting for those that have a node alive."""
        mine = block(self._place, level - 1, self.fan_in)
        below = [
            index
            for index in sub_blocks(block(self._place, level, self.fan_in), level, self.fan_in)
            if index != mine and self._members_in(block_places(index, level - 1, self.fan_in))
        ]
        received = self._receive(level, below)
        peers: list[PeerCapture] = []
        answered: set[int] = set()
        for index, data in received.items():
            with contextlib.suppress(ValueError):
                first = self._members_in(block_places(index, level - 1, self.fan_in))[0]
                # a node's host and ranks, for the record (its beat; a view above says its own)
                beat = self._beat(first) if level == 1 else self._beats.get(first, (None,))[0]
                peers.append(PeerCapture(first, beat.host if beat else None, unpack(data)))
                answered.add(index)
        silent = [index for index in below if index not in answered]
        nodes = self._nodes_seen(level, view, silent, peers)
        return merge(view, self.me.host, peers, nodes)

    def _arrivals_key(self, level: int) -> str:
        """The count of views the block of this node at `level` has been sent."""
        return f"arrived/{self.epoch}/{level}/{block(self._place, level, self.fan_in)}"

    def _arrived(self, level: int) -> None:
        """Count what this node just left for its block's leader at `level`."""
        with contextlib.suppress(Exception):
            self.board.add(self._arrivals_key(level), 1)

    def _arrivals(self, level: int) -> int | None:
        """How many views this block's leader was sent at `level`; None when unknown."""
        try:
            return self.board.add(self._arrivals_key(level), 0)
        except Exception:
            return None

    def _receive(self, level: int, below: list[int]) -> dict[int, bytes]:
        """The views of the blocks `below`, as they arrive. A leader reads one counter a look
        and the blocks' keys only when it moved (a key a look for each of 63 blocks, on 16
        leaders, was 4,000 store requests a second at 1,024 nodes); whether the blocks still
        awaited have a node alive is asked only once arrivals stall."""
        received: dict[int, bytes] = {}
        deadline = self._deadline(level)
        scanned: int | None = -1
        moved = time.monotonic()
        while True:
            count = self._arrivals(level)
            if count is None or count != scanned:
                scanned, moved = count, time.monotonic()
                for index in below:
                    if index not in received:
                        with contextlib.suppress(Exception):
                            value = self.board.get(self._below_key(level, index))
                            if value is not None:
                                received[index] = value
            pending = [index for index in below if index not in received]
            if not pending or time.monotonic() >= deadline:
                return received
            if time.monotonic() - moved >= STALL_S and not any(
                first_alive(
                    self._members_in(block_places(index, level - 1, self.fan_in)), self._alive
                )
                is not None
                for index in pending
            ):
                return received
            time.sleep(POLL_S)

    def _nodes_seen(
        self, level: int, view: Bundle, silent: list[int], peers: list[PeerCapture]
    ) -> NodesEvidence:
        """Every node of this block as the exchange saw it: the views of the blocks below say
        which of theirs answered (alike nodes as classes, `node_classes`); a block that did
        not answer is listed node by node. Only the blocks that did not answer are walked, so
        a level costs what its views hold, not what its nodes are."""
        listed: list[NodeSeen] = []
        classes: list[NodeClass] = []
        declared_by = self.me.node if self.me.declared else None
        if view.nodes is not None:
            listed += view.nodes.nodes
            classes += view.nodes.classes
            declared_by = declared_by or view.nodes.declared_by
        else:
            listed.append(
                self._answered(self.me.node, self.me.host, self.me.ranks, 0.0, self._shape(view))
            )
        now = time.time()
        for peer in peers:
            if level > 1 and peer.bundle.nodes is not None:
                listed += peer.bundle.nodes.nodes
                classes += peer.bundle.nodes.classes
                declared_by = declared_by or peer.bundle.nodes.declared_by
            else:
                beat = self._beats.get(peer.node, (None, 0.0, 0.0))[0]
                ranks, age = (beat.ranks, round(now - beat.at, 1)) if beat else ((), None)
                shape = self._shape(peer.bundle)
                listed.append(self._answered(peer.node, peer.host, ranks, age, shape))
        for index in silent:
            for member in self._members_in(block_places(index, level - 1, self.fan_in)):
                # a node of this block is read (63 at most); those of a block above, as known
                if level == 1:
                    self._beat(member)
                looked = member in self._beats
                beat = self._beats[member][0] if looked else None
                listed.append(
                    NodeSeen(
                        node=member,
                        host=beat.host if beat else None,
                        ranks=beat.ranks if beat else (),
                        joined=beat is not None or not looked,  # never a beat: never joined
                        answered=False,
                        silent_s=round(now - beat.at, 1) if beat else None,
                    )
                )
        top = level == levels(max(self._size(), 2), self.fan_in)
        if top and declared_by is None:
            with contextlib.suppress(Exception):
                value = self.board.get(f"declared/{self.epoch}")
                declared_by = value.decode(errors="replace") if value else None
        expected = self.me.expected
        if top and expected is not None and all(n.node.isdigit() for n in listed):
            absent, runs = never_joined(listed, classes, expected)
            listed += absent
            classes += runs
        nodes, node_classes = fold(listed, classes, self._size())
        return NodesEvidence(
            this_node=self.me.node,
            expected=expected,
            nodes=tuple(sorted(nodes, key=lambda n: node_order(n.node))),
            declared_by=declared_by,
            transport=self.me.transport,
            classes=node_classes,
        )

    def _shape(self, capture: Bundle) -> str | None:
        """The shape of a node's ranks (`node_classes`), in a job large enough to fold its
        nodes; a capture it cannot be read from has none (the node is then listed)."""
        if self._size() <= LISTED_NODES:
            return None
        try:
            return node_shape(capture)
        except Exception:
            return None

    @staticmethod
    def _answered(
        node: str, host: str | None, ranks: Sequence[int], silent_s: float | None, shape: str | None
    ) -> NodeSeen:
        """A node whose capture this level received, with the shape of its ranks."""
        return NodeSeen(
            node=node,
            host=host,
            ranks=tuple(sorted(ranks)),
            answered=True,
            silent_s=silent_s,
            shape=shape,
        )


def own_view(bundle: Bundle, me: Me, problem: str | None) -> Bundle:
    """This node's capture as the whole job's view, where the board was never reached."""
    from hangdoctor.i18n import _

    nodes = NodesEvidence(
        this_node=me.node,
        expected=me.expected,
        nodes=(
            NodeSeen(
                node=me.node,
                host=me.host,
                ranks=tuple(sorted(me.ranks)),
                answered=True,
                silent_s=0.0,
            ),
        ),
        declared_by=me.node if me.declared else None,
        transport=_("{transport} (not reached: {problem})", transport=me.transport, problem=problem)
        if problem
        else me.transport,
    )
    return merge(bundle, me.host, [], nodes)
