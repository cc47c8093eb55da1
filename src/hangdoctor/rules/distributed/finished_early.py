"""HD320 distributed.uneven_inputs: the other ranks wait in a collective inside the training loop
while one rank, in no collective, is past that loop: it ran fewer steps and went on."""

from __future__ import annotations

from collections.abc import Iterable

from hangdoctor.analysis.advice import process_group_timeout
from hangdoctor.analysis.frames import short_location
from hangdoctor.analysis.job import JobView
from hangdoctor.analysis.rank_blame import finished_loops
from hangdoctor.analysis.ranks import RankState, rank_list, rank_view
from hangdoctor.evidence.model import Frame
from hangdoctor.i18n import _, _n
from hangdoctor.rules.base import Rule
from hangdoctor.rules.confidence import Confidence
from hangdoctor.rules.distributed._ranks import describe_group, rank_culprit
from hangdoctor.rules.finding import Finding
from hangdoctor.rules.helpers import at
from hangdoctor.taxonomy import Category


def _steps(state: RankState) -> int | None:
    return state.status.steps if state.status is not None and state.status.steps else None


class RankFinishedEarly(Rule):
    """a rank ran out of steps and left the training loop the others still wait in

    Fires when: the other ranks wait in one collective inside the training loop and one rank is
    in no collective, past that loop in every function both stacks run in (inside none of the
    loops around the others' collective, at any level): it ran fewer iterations and went on

    Why: Each rank decides for itself how many steps its loop runs (the size of its own shard,
    its own `steps_per_epoch`, an uneven split of files). The rank with fewer leaves the loop and
    goes on to what follows (saving, waiting for a file the chief writes at the end, an
    evaluation), while the others wait in the loop's next collective for it: neither side can
    go on, and there is no error.

    Instead: Give every rank the same number of synchronising steps: compute the steps from the
    global dataset size, or take the minimum over the ranks (`all_reduce(MIN)`) before the
    loop; `drop_last=True` with a `DistributedSampler`; shard one dataset evenly (tf.distribute's
    `AutoShardPolicy.DATA`) rather than files of different sizes.
    """

    id = "HD320"
    category = Category.DISTRIBUTED_UNEVEN_INPUTS
    reads = "ranks"
    specificity = 89

    def check(self, job: JobView) -> Iterable[Finding]:
        view = rank_view(job)
        waiting = view.alive.where(lambda s: s.in_collective)
        if not waiting:
            return
        (call, seq), _count = waiting.count_by(lambda s: (s.call, s.seq)).most_common(1)[0]
        waiting = waiting.where(lambda s: (s.call, s.seq) == (call, seq))
        outside = view.alive.where(lambda s: not s.in_collective and not s.in_start_up)
        if len(outside) > len(waiting):
            return
        for state in outside:
            frame = finished_loops(state, list(waiting))
            if frame is not None:
                yield self._finding(job, state, list(waiting), frame, call)

    def _finding(
        self,
        job: JobView,
        state: RankState,
        waiting: list[RankState],
        frame: Frame,
        call: str | None,
    ) -> Finding:
        loop = frame.loops[0]
        where = short_location(state.site) if state.site else _("its current line")
        evidence = [
            describe_group(waiting),
            _(
                "rank {rank} is in no collective, past the loop `{loop}`: at {where}",
                rank=state.rank,
                loop=loop,
                where=at(state.site),
            ),
        ]
        mine, theirs = _steps(state), [s for s in map(_steps, waiting) if s is not None]
        if mine is not None and theirs and mine < max(theirs):
            evidence.append(
                _(
                    "steps counted: rank {rank} {mine}, the others up to {theirs}",
                    rank=state.rank,
                    mine=mine,
                    theirs=max(theirs),
                )
            )
        for way_out in frame.loop_exits[:2]:  # a rank may also leave by a decision of its own
            evidence.append(
                _(
                    "the loop can also be left early, at line {line} `{code}`: if rank {rank} "
                    "alone took that way, the decision was its own, not its data's",
                    line=way_out.line,
                    code=way_out.code or "break",
                    rank=state.rank,
                )
            )
        return self.finding(
            confidence=Confidence.LIKELY if frame.loop_exits else Confidence.STRONG,
            title=_n(
                "Rank {rank} left the training loop early and waits at {where}; {waiting} "
                "still waits in {call} inside it",
                "Rank {rank} left the training loop early and waits at {where}; {waiting} "
                "still wait in {call} inside it",
                len(waiting),
                rank=state.rank,
                where=where,
                waiting=rank_list(waiting),
                call=call,
            ),
            explanation=_(
                "Rank {rank} ran fewer iterations of `{loop}` than the others and went on past "
                "it; the others wait in the loop's next collective for a rank that will never "
                "join it. Its inputs (its shard, its step count) were uneven.",
                rank=state.rank,
                loop=loop,
            ),
            culprit=rank_culprit(job, state),
            related=tuple(rank_culprit(job, s) for s in waiting[:4]),
            evidence=tuple(evidence),
            fixes=(
                _(
                    "Give every rank the same number of steps: compute them from the global "
                    "dataset size, or all_reduce the local counts with MIN before the loop."
                ),
                _(
                    "Split the data evenly: a DistributedSampler with drop_last=True, or one "
                    "dataset sharded by the framework rather than files of different sizes."
                ),
                process_group_timeout(job),
            ),
        )
