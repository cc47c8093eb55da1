"""What the cross-rank rules share beyond the blame itself (`analysis/rank_blame.py`): the
words for a group of ranks, the culprit of a rank, and how a loop was left early (their
examples' evidence is in `_examples.py`)."""

from __future__ import annotations

from hangdoctor.analysis.job import JobView
from hangdoctor.analysis.ranks import RankState, rank_list
from hangdoctor.evidence.model import Frame
from hangdoctor.rules.finding import Culprit, Location
from hangdoctor.rules.helpers import at, culprit


def describe_group(states: list[RankState]) -> str:
    first = states[0]
    seq = f" #{first.seq}" if first.seq is not None else ""
    return f"{rank_list(states)} {wait_words(states)} in {first.doing}{seq} at {at(first.site)}"


def wait_words(states: list[RankState]) -> str:
    return "waits" if len(states) == 1 else "wait"


def rank_culprit(job: JobView, state: RankState) -> Culprit:
    if state.process is not None:
        return culprit(job, state.process, state.thread, state.site)
    return Culprit(pid=state.pid, rank=state.rank, role="rank")


def early_exit(looping: Frame, index: int = 0) -> tuple[Location, str, bool]:
    """How loop `index` of the frame (outermost first) was left before its end: its one `break`
    or `return` (that line), or with several, the loop's header; the words for the evidence,
    and whether the exit was the only one."""
    header = looping.loops[index]
    exits = looping.loop_exits
    if len(exits) == 1:
        [way] = exits
        under = f" under `if {way.condition}`" if way.condition else ""
        return (
            Location(file=looping.file, line=way.line, function=looping.function, code=way.code),
            f"the only way out of `{header}` before its end is `{way.code}` at line "
            f"{way.line}{under}",
            True,
        )
    listed = ", ".join(f"`{e.code}` at line {e.line}" for e in exits[:4])
    return (
        Location(
            file=looping.file,
            line=looping.loop_lines[index],
            function=looping.function,
            code=header,
        ),
        f"it left `{header}` early by one of: {listed}",
        False,
    )
