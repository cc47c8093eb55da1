"""The merge tree of a job of many nodes: who merges whose captures, so that no node reads more
than `FAN_IN` of them and the job's view is built in a few rounds (LLNL's STAT merges stack
traces up a tree of the same shape).

Each node has a place: its node rank where every node is numbered (torchrun's, Slurm's), else
its index among the nodes in order. At level L the places fall in blocks of FAN_IN**L; a block's
leader is its first node still alive. Level 0 is each node's own capture. The leader of a block
at level L merges the views of the FAN_IN blocks of level L-1 within it (its own among them,
since the first node alive of a block is the first alive of its first living sub-block), and
leaves the result for the level above; the leader of the single block at the top level holds
the whole job. A leader that goes silent is replaced by the next node alive in its block: the
others find they now lead when its beat stops.

Pure functions of places: the exchange (`nodes.exchange`) does the reading and waiting."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

#: Captures (or views of blocks) one node reads at the most, at any level.
FAN_IN = 64


def node_order(node: str) -> tuple[int, int | str]:
    """Numbered nodes first, by number; then named ones, by name."""
    return (0, int(node)) if node.isdigit() else (1, node)


def places(members: Iterable[str]) -> dict[str, int]:
    """Each node's place in the tree: its number where all are numbered, else its index."""
    ordered = sorted(set(members), key=node_order)
    if all(member.isdigit() for member in ordered):
        return {member: int(member) for member in ordered}
    return {member: index for index, member in enumerate(ordered)}


def levels(size: int, fan_in: int = FAN_IN) -> int:
    """How many levels of merging `size` places need (at least one)."""
    count, span = 1, fan_in
    while span < size:
        count, span = count + 1, span * fan_in
    return count


def block(place: int, level: int, fan_in: int = FAN_IN) -> int:
    """The block at `level` that holds `place`."""
    return place // _span(level, fan_in)


def _span(level: int, fan_in: int) -> int:
    """Places in one block at `level`."""
    span = 1
    for _ in range(level):
        span *= fan_in
    return span


def block_places(index: int, level: int, fan_in: int = FAN_IN) -> range:
    """The places of block `index` at `level`."""
    span = _span(level, fan_in)
    return range(index * span, (index + 1) * span)


def sub_blocks(index: int, level: int, fan_in: int = FAN_IN) -> range:
    """The blocks of level `level - 1` that make block `index` of `level`."""
    return range(index * fan_in, (index + 1) * fan_in)


def first_alive(
    candidates: Sequence[str], alive: Callable[[str], bool], before: int | None = None
) -> str | None:
    """The first of `candidates` (in place order) that is alive, looking at no more than
    `before` of them: one look, normally, since the first is alive."""
    for member in candidates[:before]:
        if alive(member):
            return member
    return None
