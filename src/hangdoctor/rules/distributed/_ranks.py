"""What the cross-rank rules share beyond the blame itself (`analysis/rank_blame.py`): the
words for a group of ranks, the culprit of a rank, and how a loop was left early (their
examples' evidence is in `examples.toml`)."""

from __future__ import annotations

from collections.abc import Sequence

from hangdoctor.analysis.job import JobView
from hangdoctor.analysis.ranks import RankState, rank_list
from hangdoctor.evidence.model import Frame
from hangdoctor.i18n import _, _n
from hangdoctor.rules.finding import Culprit, Location
from hangdoctor.rules.helpers import at, culprit


def describe_group(states: Sequence[RankState]) -> str:
    """`ranks 0, 1 wait in all_reduce #12 at train.py:50 in train`."""
    first = states[0]
    fields = {"ranks": rank_list(states), "doing": first.doing, "where": at(first.site)}
    if first.seq is not None:
        return _n(
            "{ranks} waits in {doing} #{seq} at {where}",
            "{ranks} wait in {doing} #{seq} at {where}",
            len(states),
            seq=first.seq,
            **fields,
        )
    return _n(
        "{ranks} waits in {doing} at {where}",
        "{ranks} wait in {doing} at {where}",
        len(states),
        **fields,
    )


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
        fields = {"header": header, "code": way.code, "line": way.line}
        words = (
            _(
                "the only way out of `{header}` before its end is `{code}` at line {line} "
                "under `if {condition}`",
                condition=way.condition,
                **fields,
            )
            if way.condition
            else _(
                "the only way out of `{header}` before its end is `{code}` at line {line}",
                **fields,
            )
        )
        return (
            Location(file=looping.file, line=way.line, function=looping.function, code=way.code),
            words,
            True,
        )
    listed = ", ".join(_("`{code}` at line {line}", code=e.code, line=e.line) for e in exits[:4])
    return (
        Location(
            file=looping.file,
            line=looping.loop_lines[index],
            function=looping.function,
            code=header,
        ),
        _("it left `{header}` early by one of: {exits}", header=header, exits=listed),
        False,
    )
