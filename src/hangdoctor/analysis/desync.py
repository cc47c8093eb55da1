"""Where the ranks fell out of step: the first collective number at which their calls differ.

Collectives pair up by order: the n-th call on a process group of every rank must be the same
operation on the same sizes. One extra call on one rank (an all_gather under `if rank == 0:` at
step 0) shifts every later collective by one; the ranks then stop far later, in different
places, and their stacks name only where they stopped. The instrumentation numbers each rank's
calls per group and notes the user's line that made each (`CollectiveCall`), and counts calls
per line (`CollectiveSite`, which outlives the ring of recent calls): this walks them back to
where the sequences part, as PyTorch's fr_trace does with Flight Recorder numbers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from hangdoctor.analysis.frames import short_location
from hangdoctor.evidence.model import CollectiveCall, CollectiveSite, Frame
from hangdoctor.i18n import _

# Operations whose input has one shape on every rank: a different shape is a mismatch. Others
# (all_to_all's splits, gather's and scatter's lists, all_gather's uneven inputs) may differ.
SAME_SIZE_OPS = frozenset(
    {
        "all_reduce",
        "allreduce",
        "broadcast",
        "reduce",
        "all_gather_into_tensor",
        "_allgather_base",
        "reduce_scatter_tensor",
        "_reduce_scatter_base",
        "all_gather_single",
        "reduce_scatter_single",
    }
)


@dataclass(frozen=True)
class DesyncOrigin:
    """The call at which one rank's collectives part from the others'."""

    rank: int  # the rank that made the call the others did not make (or a different one)
    group: str  # the process group's name
    seq: int  # the call's number in that group, on `rank`
    op: str
    site: Frame | None  # the user's line that made it
    others: Mapping[int, str]  # each other rank's call under that number, in words
    extra: bool  # the others never made this call: one collective more on `rank`
    last_seq: int  # the newest number `rank` reached in that group: later than seq, or not

    @property
    def earlier(self) -> bool:
        """Whether the ranks parted before the call the rank is in now (or made last)."""
        return self.seq < self.last_seq

    def describe(self) -> str:
        """One evidence line."""
        where = short_location(self.site) if self.site is not None else _("a line not recorded")
        others = "; ".join(
            _("rank {rank} {what}", rank=rank, what=what)
            for rank, what in sorted(self.others.items())
        )
        kind = _("one more than the others made") if self.extra else _("where the others differ")
        return _(
            "collective #{seq} of process group {group}: rank {rank} called {op} at {where} "
            "({kind}); {others}; the ranks have been out of step since (rank {rank} is now at "
            "#{last_seq})",
            seq=self.seq,
            group=self.group,
            rank=self.rank,
            op=self.op,
            where=where,
            kind=kind,
            others=others,
            last_seq=self.last_seq,
        )


_Place = tuple[str, int]


def path_of(site: Frame | None, callers: Sequence[Frame]) -> tuple[_Place, ...]:
    """The user's line that made a call and the user's lines that led there: one helper that
    gathers for two metrics is two call paths."""
    return tuple((f.file, f.line) for f in (site, *callers) if f is not None)


def _path(call: CollectiveCall) -> tuple[_Place, ...]:
    return path_of(call.site, call.callers)


def _same(a: CollectiveCall, b: CollectiveCall, sites: bool = True) -> bool:
    """Whether two ranks' calls under one number pair up (and, with `sites`, come from the
    same line by the same path)."""
    if a.op != b.op:
        return False
    if a.op in SAME_SIZE_OPS and a.sizes is not None and b.sizes is not None and a.sizes != b.sizes:
        return False
    if not sites:
        return True
    return _path(a) == _path(b)


def divergent_frame(
    site: Frame | None, callers: Sequence[Frame], elsewhere: set[_Place]
) -> Frame | None:
    """The outermost frame of a call path that no other rank's path went through: where that
    rank's code took a way the others did not (the `if` around a metric's `compute()` that
    reaches a shared gathering helper). The site itself when every frame is shared."""
    for frame in reversed((site, *callers)):
        if frame is not None and (frame.file, frame.line) not in elsewhere:
            return frame
    return site


def _words(call: CollectiveCall | None, sizes_matter: bool = False) -> str:
    if call is None:
        return _("made no call under that number")
    where = short_location(call.site) if call.site is not None else None
    if sizes_matter and call.sizes and call.op in SAME_SIZE_OPS:
        if where is not None:
            return _(
                "called {op} on sizes {sizes} at {where}", op=call.op, sizes=call.sizes, where=where
            )
        return _("called {op} on sizes {sizes}", op=call.op, sizes=call.sizes)
    if where is not None:
        return _("called {op} at {where}", op=call.op, where=where)
    return _("called {op}", op=call.op)


_MOST_EXTRA = 4  # calls one rank may have made more than another in one go (a metric: 2)


def _ahead(
    mine: Mapping[int, CollectiveCall], theirs: Mapping[int, CollectiveCall], seq: int, extra: int
) -> bool:
    """Whether `mine` from seq + extra on pairs up with `theirs` from seq on, for at least
    one call: `mine` made `extra` calls more, from seq."""
    compared = 0
    shift = 0
    while seq + shift + extra in mine and seq + shift in theirs:
        if not _same(mine[seq + shift + extra], theirs[seq + shift]):
            return False
        compared += 1
        shift += 1
    return compared > 0


def _one_ahead(
    mine: Mapping[int, CollectiveCall], theirs: Mapping[int, CollectiveCall], seq: int
) -> bool:
    """Whether `mine` made a few calls more (one to _MOST_EXTRA), from seq, than `theirs`."""
    return any(_ahead(mine, theirs, seq, extra) for extra in range(1, _MOST_EXTRA + 1))


def _from_calls(
    group: str, calls: Mapping[int, Mapping[int, CollectiveCall]]
) -> DesyncOrigin | None:
    """The first number in `group` at which the ranks' recorded calls differ."""
    numbers = sorted({seq for mine in calls.values() for seq in mine})
    for seq in numbers:
        here = {rank: mine[seq] for rank, mine in calls.items() if seq in mine}
        if len(here) < 2:
            continue
        first = next(iter(here.values()))
        if all(_same(first, call) for call in here.values()):
            continue
        for rank, call in sorted(here.items()):
            others = [r for r in here if r != rank]
            if all(_one_ahead(calls[rank], calls[other], seq) for other in others):
                theirs = {
                    place for other in others for c in calls[other].values() for place in _path(c)
                }
                return DesyncOrigin(
                    rank=rank,
                    group=group,
                    seq=seq,
                    op=call.op,
                    site=divergent_frame(call.site, call.callers, theirs),
                    others={r: _words(here[r]) for r in others},
                    extra=True,
                    last_seq=max(calls[rank]),
                )
        if all(_same(first, call, sites=False) for call in here.values()):
            continue  # the same operation from different lines (an if/else): they pair up
        odd = _odd_one(here)
        return DesyncOrigin(
            rank=odd,
            group=group,
            seq=seq,
            op=here[odd].op,
            site=here[odd].site,
            others={r: _words(c, sizes_matter=True) for r, c in here.items() if r != odd},
            extra=False,
            last_seq=max(calls[odd]),
        )
    return None


def _odd_one(here: Mapping[int, CollectiveCall]) -> int:
    """The rank whose operation fewest ranks share (the lowest such rank)."""
    counts: dict[str, int] = {}
    for call in here.values():
        counts[call.op] = counts.get(call.op, 0) + 1
    return min(here, key=lambda r: (counts[here[r].op], r))


_Key = tuple[str, tuple[_Place, ...]]  # op, call path


def _from_sites(
    group: str, sites: Mapping[int, Sequence[CollectiveSite]], full: set[int]
) -> DesyncOrigin | None:
    """A line that some ranks called a collective from and others never did (ranks whose
    table of sites filled up cannot say `never`), except lines that pair up with another such
    line (the two branches of an if/else calling the same operation as often)."""
    tables = {
        rank: {(s.op, path_of(s.site, s.callers)): s for s in mine} for rank, mine in sites.items()
    }
    if len(tables) < 2:
        return None
    keys = {key for table in tables.values() for key in table}
    only: dict[_Key, frozenset[int]] = {}
    for key in keys:
        having = frozenset(r for r, table in tables.items() if key in table)
        lacking = set(tables) - having - full
        if lacking:
            only[key] = having
    unpaired = [
        key
        for key, having in only.items()
        if not any(
            other != key
            and other[0] == key[0]
            and only[other] == frozenset(tables) - having
            and _calls(tables, other) == _calls(tables, key)
            and _firsts(tables, other) == _firsts(tables, key)
            for other in only
        )
    ]
    if not unpaired:
        return None
    key = min(unpaired, key=lambda k: min(tables[r][k].first_seq for r in only[k]))
    rank = min(only[key])
    site = tables[rank][key]
    theirs = {
        place
        for r, table in tables.items()
        if r not in only[key]
        for _, path in table
        for place in path
    }
    return DesyncOrigin(
        rank=rank,
        group=group,
        seq=site.first_seq,
        op=site.op,
        site=divergent_frame(site.site, site.callers, theirs),
        others=dict.fromkeys(
            (r for r in tables if r not in only[key]), _("never called it from that line")
        ),
        extra=True,
        last_seq=max(s.last_seq for s in tables[rank].values()),
    )


def _calls(tables: Mapping[int, Mapping[_Key, CollectiveSite]], key: _Key) -> set[int]:
    return {table[key].calls for table in tables.values() if key in table}


def _firsts(tables: Mapping[int, Mapping[_Key, CollectiveSite]], key: _Key) -> set[int]:
    """The numbers of a line's first calls: the two branches of an if/else start at the same
    number on their ranks; a line one rank calls earlier than another's line does not pair."""
    return {table[key].first_seq for table in tables.values() if key in table}


def desync_origin(
    calls: Mapping[int, Sequence[CollectiveCall]],
    sites: Mapping[int, Sequence[CollectiveSite]],
    sites_limit: int = 64,
) -> DesyncOrigin | None:
    """Where the ranks' collectives first part, from each rank's recent calls and its calls
    per line: an extra call in the recent calls first, then a line only some ranks called
    from, then the first number whose operations differ. None when they never part."""
    groups = sorted(
        {c.group for mine in calls.values() for c in mine}
        | {s.group for mine in sites.values() for s in mine},
        key=lambda g: (g != "0", g),
    )
    found: list[DesyncOrigin] = []
    for group in groups:
        by_rank = {
            rank: {c.seq: c for c in mine if c.group == group} for rank, mine in calls.items()
        }
        recent = _from_calls(group, {r: m for r, m in by_rank.items() if m})
        full = {rank for rank, mine in sites.items() if len(mine) >= sites_limit}
        per_line = {rank: [s for s in mine if s.group == group] for rank, mine in sites.items()}
        lines = _from_sites(group, {r: m for r, m in per_line.items() if m}, full)
        found += [
            o for o in (recent if recent and recent.extra else None, lines, recent) if o is not None
        ]
    return next((o for o in found if o.earlier), found[0] if found else None)
