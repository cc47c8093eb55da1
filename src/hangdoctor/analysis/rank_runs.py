"""Ranks' states held by class: runs of ranks that share one state (issue 28).

In a job analysed by class (`nodes.classes`) the 131,072 ranks of a hang are three states: the
launchers', the waiting ranks', the straggler's. Standing each rank's state up one by one, and
walking them in every rule, was what remained linear in the diagnosis. Here a state is held
once with the runs of ranks it stands for: a rule that filters by what a rank is doing, counts
ranks, or names them as ranges does so once per run; a rule that walks every rank still can
(iteration stands each rank up on the fly, in rank order), so what it finds is unchanged.

Only what does not depend on the rank's number may be asked of a run's state (`where`,
`count_by`, `by`): the members of a class differ in nothing else."""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, TypeVar, overload

from hangdoctor.analysis.rank_sets import Spans, union_ranges

if TYPE_CHECKING:
    from hangdoctor.analysis.ranks import RankState

#: (first rank, last rank, the state they share); the state's own rank may lie outside.
Run = tuple[int, int, "RankState"]
_Key = TypeVar("_Key", bound=Hashable)


def as_rank(state: RankState, rank: int) -> RankState:
    """The same state for another rank of its class (`dataclasses.replace` re-runs __init__,
    too slow for 131,072 ranks)."""
    if state.rank == rank:
        return state
    twin = object.__new__(type(state))
    twin.__dict__.update(state.__dict__)
    twin.__dict__["rank"] = rank
    return twin


class RankStates(Sequence["RankState"]):
    """Ranks' states in rank order, held as runs (see the module's docstring)."""

    __slots__ = ("_ends", "_runs")

    def __init__(self, runs: Iterable[Run]) -> None:
        self._runs = sorted(runs, key=lambda run: run[0])
        self._ends: list[int] = []  # ranks up to the end of each run, for indexing
        total = 0
        for low, high, _state in self._runs:
            total += high - low + 1
            self._ends.append(total)

    @classmethod
    def of(cls, states: Iterable[RankState]) -> RankStates:
        """States already stood up one by one (a list a rule built), a run each."""
        if isinstance(states, RankStates):
            return states
        return cls((s.rank, s.rank, s) for s in states)

    @property
    def runs(self) -> list[Run]:
        return self._runs

    def __len__(self) -> int:
        return self._ends[-1] if self._ends else 0

    @overload
    def __getitem__(self, index: int) -> RankState: ...

    @overload
    def __getitem__(self, index: slice) -> list[RankState]: ...

    def __getitem__(self, index: int | slice) -> RankState | list[RankState]:
        if isinstance(index, slice):
            start, stop, step = index.indices(len(self))
            return [self[i] for i in range(start, stop, step)]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(index)
        at = bisect.bisect_right(self._ends, index)
        low, _high, state = self._runs[at]
        before = self._ends[at - 1] if at else 0
        return as_rank(state, low + index - before)

    def __iter__(self) -> Iterator[RankState]:
        for low, high, state in self._runs:
            for rank in range(low, high + 1):
                yield as_rank(state, rank)

    def __bool__(self) -> bool:
        return bool(self._runs)

    def where(self, keep: Callable[[RankState], bool]) -> RankStates:
        """The ranks whose state `keep` accepts, asked once a run."""
        return RankStates(run for run in self._runs if keep(run[2]))

    def count_by(self, key: Callable[[RankState], _Key]) -> Counter[_Key]:
        """How many ranks have each value of `key`."""
        counts: Counter[_Key] = Counter()
        for low, high, state in self._runs:
            counts[key(state)] += high - low + 1
        return counts

    def by(self, key: Callable[[RankState], _Key]) -> dict[_Key, RankStates]:
        """The ranks split by `key`, in the order each value is first met."""
        grouped: dict[_Key, list[Run]] = {}
        for run in self._runs:
            grouped.setdefault(key(run[2]), []).append(run)
        return {value: RankStates(runs) for value, runs in grouped.items()}

    def distinct(self) -> list[RankState]:
        """Each state once (a class's, once for all its ranks)."""
        return list({id(state): state for _low, _high, state in self._runs}.values())

    def spans(self) -> Spans:
        """The ranks as inclusive ranges."""
        return union_ranges((low, high) for low, high, _state in self._runs)

    def first_rank(self) -> int | None:
        return self._runs[0][0] if self._runs else None


class RankMap(Mapping[int, "RankState"]):
    """Rank -> its state, over runs that do not overlap: looked up by bisection, a class's
    member stood up only when asked for."""

    __slots__ = ("_highs", "_lows", "_states")

    def __init__(self, states: RankStates) -> None:
        self._states = states
        self._lows = [low for low, _high, _state in states.runs]
        self._highs = [high for _low, high, _state in states.runs]

    @property
    def states(self) -> RankStates:
        """Every rank's state, in rank order, as runs."""
        return self._states

    def _run(self, rank: object) -> Run | None:
        if not isinstance(rank, int):
            return None
        at = bisect.bisect_right(self._lows, rank) - 1
        if at < 0 or rank > self._highs[at]:
            return None
        return self._states.runs[at]

    def __getitem__(self, rank: int) -> RankState:
        run = self._run(rank)
        if run is None:
            raise KeyError(rank)
        return as_rank(run[2], rank)

    def __contains__(self, rank: object) -> bool:
        return self._run(rank) is not None

    def __iter__(self) -> Iterator[int]:
        for low, high, _state in self._states.runs:
            yield from range(low, high + 1)

    def __len__(self) -> int:
        return len(self._states)
