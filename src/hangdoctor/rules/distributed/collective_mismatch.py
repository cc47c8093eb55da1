"""HD311 distributed.collective_mismatch: Ranks wait in different collectives, or in one that only
some of them call."""

from __future__ import annotations

from collections.abc import Iterable

from hangdoctor.analysis.advice import PROCESS_GROUP_TIMEOUT
from hangdoctor.analysis.frames import short_location
from hangdoctor.analysis.job import JobView
from hangdoctor.analysis.ranks import rank_list, rank_view
from hangdoctor.rules.base import Example, Rule
from hangdoctor.rules.distributed._ranks import (
    all_in_the_same_collective,
    barrier_only_on_rank_0,
    describe_group,
    epoch_helper_ran_out_of_data,
    guarded_barrier_beside_a_helper,
    is_uneven,
    rank_culprit,
    rank_guard,
    rank_ran_out_of_data,
    split_groups,
    straggler_completion_not_yet_counted,
)
from hangdoctor.rules.finding import Finding, Severity
from hangdoctor.taxonomy import Category


class CollectiveMismatch(Rule):
    """Ranks wait in different collectives, or in one that only some of them call."""

    id = "HD311"
    category = Category.DISTRIBUTED_COLLECTIVE_MISMATCH
    summary = "ranks are in different collectives"
    fires_when = (
        "ranks wait in different collectives, or in one only some of them call; names the "
        "call site and the `if` condition around it (`rank == 0`), and the sequence number "
        "where they diverged"
    )
    reads = "ranks"
    specificity = 85
    fires_on = (Example("a barrier only rank 0 calls", barrier_only_on_rank_0),
                Example("a barrier only rank 0 calls, beside a helper's all_reduce",
                        guarded_barrier_beside_a_helper))
    quiet_on = (Example("every rank in the same collective", all_in_the_same_collective),
                Example("a rank that ran out of data", rank_ran_out_of_data),
                Example("a rank that returned from its epoch helper first",
                        epoch_helper_ran_out_of_data),
                Example("a rank reading a socket whose last collective's completion the "
                        "Flight Recorder has not counted yet",
                        straggler_completion_not_yet_counted))

    def check(self, job: JobView) -> Iterable[Finding]:
        split = split_groups(rank_view(job))
        if split is None or is_uneven(*split):
            return
        odd, rest = split
        state = odd[0]
        site = state.site
        where = short_location(site) if site else "its call site"
        evidence = [describe_group(odd), describe_group(rest)]
        seqs = {s.seq for s in odd + rest if s.seq is not None}
        if len(seqs) == 1:
            source = "Flight Recorder: " if rank_view(job).flight_recorder else ""
            evidence.append(f"{source}all of them are at collective #{seqs.pop()}: the same "
                            "step of the sequence, but not the same operation")
        guarded = rank_guard(state)
        guard = guarded[1] if guarded else (
            site.guards[-1] if site is not None and site.guards else None)
        if guarded is not None and guarded[0] is not site:
            where = short_location(guarded[0])
        if guard:
            evidence.append(f"the call at {where} runs only where `{guard}` holds")
            first_fix = (f"The {state.call} at {where} runs only where `{guard}` holds: move it "
                         "out of that `if` block, so that every rank calls it.")
        else:
            first_fix = (f"Every rank must call the same collectives in the same order: "
                         f"{rank_list(odd)} call {state.call} at {where} while "
                         f"{rank_list(rest)} call {rest[0].call} at "
                         f"{short_location(rest[0].site) if rest[0].site else 'another place'}.")
        yield Finding(
            id=self.id, category=self.category, severity=Severity.ERROR, confidence=0.9,
            title=f"Collective mismatch: {rank_list(odd)} in {state.call} at {where}, "
                  f"{rank_list(rest)} in {rest[0].call}",
            explanation=("Collectives pair up by order: when ranks call different ones (or one "
                         "only some ranks call), each waits for a partner that never comes."),
            culprit=rank_culprit(job, state),
            related=tuple(rank_culprit(job, s) for s in rest[:4]),
            evidence=tuple(evidence),
            fixes=(first_fix, "Check with TORCH_DISTRIBUTED_DEBUG=DETAIL on a small run "
                   "(it checks that collectives match; it is slow, so not for production).",
                   PROCESS_GROUP_TIMEOUT),
        )
