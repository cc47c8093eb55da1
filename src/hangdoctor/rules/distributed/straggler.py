"""HD310 distributed.straggler: Peers wait inside a collective; one rank is not in any: it is stuck
(or slow) elsewhere."""

from __future__ import annotations

from collections.abc import Iterable

from hangdoctor.analysis.advice import process_group_timeout, wait_fixes
from hangdoctor.analysis.frames import short_location
from hangdoctor.analysis.frameworks import dataloader_consumer
from hangdoctor.analysis.job import JobView
from hangdoctor.analysis.rank_runs import RankStates
from hangdoctor.analysis.ranks import RankState, RankView, rank_list, rank_view
from hangdoctor.analysis.waitgraph import Sink, build_wait_graph
from hangdoctor.analysis.waits import WaitKind, describe_wait
from hangdoctor.i18n import _, _n
from hangdoctor.rules.base import Deferral, Rule
from hangdoctor.rules.confidence import Confidence
from hangdoctor.rules.distributed._ranks import describe_group, rank_culprit
from hangdoctor.rules.finding import Finding
from hangdoctor.rules.helpers import at
from hangdoctor.rules.thread_deaths import died_in, thread_deaths
from hangdoctor.taxonomy import Category


def _majority_waiting(
    view: RankView,
) -> tuple[RankStates, tuple[str | None, int | None]] | None:
    """The ranks in the collective most ranks wait in (counted once a class: `rank_runs`)."""
    waiting = view.alive.where(lambda s: s.in_collective)
    if not waiting:
        return None
    counts = waiting.count_by(lambda s: (s.call, s.seq))
    (call, seq), _count = counts.most_common(1)[0]
    return waiting.where(lambda s: (s.call, s.seq) == (call, seq)), (call, seq)


def _why_stuck(job: JobView, state: RankState) -> list[str]:
    """What keeps the straggler's thread waiting, from the job's wait-for graph, and a thread
    of its process that died of an exception (the producer it waits for, say)."""
    if state.process is None or state.thread is None:
        return []
    lines = []
    chain = build_wait_graph(job).follow((state.process.pid, state.thread.tid))
    if chain.sink in (Sink.NOBODY, Sink.CYCLE):
        lines.append(
            _("rank {rank} cannot go on by itself: {reason}", rank=state.rank, reason=chain.reason)
        )
    death = died_in(thread_deaths(job), state.process.pid)
    if death is not None and death.raised.rank in (None, state.rank):
        raised = death.raised
        died = {
            "rank": state.rank,
            "thread": raised.thread or _("a thread"),
            "type": raised.short_type,
            "message": raised.message,
        }
        lines.append(
            _(
                "in rank {rank}, {thread} died of {type}: {message} at {where}",
                where=at(raised.location),
                **died,
            )
            if raised.location
            else _("in rank {rank}, {thread} died of {type}: {message}", **died)
        )
    return lines


class Straggler(Rule):
    """one rank is stuck outside any collective while its peers wait in one

    Fires when: the other ranks wait inside one collective and one rank is in none: it is blocked
    (or computing) elsewhere; says where and on what

    Why: A collective completes only when every rank of its group joins it. When one rank is blocked
    or still computing outside any collective (a slow evaluation or checkpoint on rank 0, a read
    that hangs, a lock), every other rank waits inside the collective, uses no CPU and looks stuck:
    the waiting ranks are victims, the odd one out is the cause.

    Instead: Fix what the odd rank waits on (its stack names the line); keep rank-only work short or
    move it off the critical path (save checkpoints asynchronously, evaluate on every rank), and
    give `init_process_group(timeout=...)` a value that turns a stuck rank into an error.
    """

    id = "HD310"
    category = Category.DISTRIBUTED_STRAGGLER
    reads = "ranks"
    # Above a process-level mechanism found in the same rank (a dead producer thread, a lock):
    # in a distributed job the other ranks are its victims, and the rank is the news; the
    # mechanism is told in this finding's evidence.
    specificity = 90
    defers_to = (
        Deferral(
            frozenset({"HD320"}),
            why=(
                "the rank outside the collective is past the loop the others wait in: it ran "
                "fewer steps, and HD320 says so where this rule would say only where it waits"
            ),
            same_culprit=True,
        ),
        Deferral(
            frozenset({"HD119"}),
            why=(
                "the rank outside the collective waits for a peer that waits in it: HD119 "
                "names the cycle, where this rule would blame the rank alone"
            ),
            same_culprit=True,
        ),
    )

    def check(self, job: JobView) -> Iterable[Finding]:
        view = rank_view(job)
        majority = _majority_waiting(view)
        if majority is None:
            return
        waiting, _call = majority
        outside = view.alive.where(lambda s: not s.in_collective and not s.in_start_up)
        if not outside or len(outside) > len(waiting):
            return
        for state in outside:
            if state.process is None or state.thread is None:
                continue
            wait = describe_wait(job, state.process, state.thread)
            where = short_location(state.site) if state.site else _("its current line")
            frames = state.thread.python.frames if state.thread.python else ()
            doing = (
                _("waiting for its next batch from the DataLoader")
                if dataloader_consumer(frames)
                else wait.summary
            )
            evidence = [
                describe_group(waiting),
                _(
                    "rank {rank} is not in any collective: it is {doing} at {where}",
                    rank=state.rank,
                    doing=doing,
                    where=at(state.site),
                ),
            ]
            if state.last_recorded is not None and waiting[0].seq is not None:
                evidence.append(
                    _(
                        "Flight Recorder: rank {rank}'s last collective is "
                        "#{seq} ({op}); the others are blocked in #{other_seq}",
                        rank=state.rank,
                        seq=state.last_recorded.seq,
                        op=state.last_recorded.op,
                        other_seq=waiting[0].seq,
                    )
                )
            elif state.status is not None and waiting[0].seq is not None:
                evidence.append(
                    _(
                        "rank {rank} has started {collectives} collectives; the "
                        "others are blocked in #{seq}",
                        rank=state.rank,
                        collectives=state.status.collectives,
                        seq=waiting[0].seq,
                    )
                )
            evidence += _why_stuck(job, state)
            slow = wait.kind is WaitKind.RUNNING
            fields = {
                "rank": state.rank,
                "where": where,
                "waiting": rank_list(waiting),
                "call": waiting[0].call,
            }
            yield self.finding(
                confidence=Confidence.FAIR if slow else Confidence.STRONG,
                title=_n(
                    "Rank {rank} is busy outside any collective at {where} while {waiting} "
                    "waits in {call}",
                    "Rank {rank} is busy outside any collective at {where} while {waiting} "
                    "wait in {call}",
                    len(waiting),
                    **fields,
                )
                if slow
                else _n(
                    "Rank {rank} is stuck outside any collective at {where} while {waiting} "
                    "waits in {call}",
                    "Rank {rank} is stuck outside any collective at {where} while {waiting} "
                    "wait in {call}",
                    len(waiting),
                    **fields,
                ),
                explanation=_(
                    "Collectives complete only when every rank joins. The other ranks are "
                    "waiting for rank {rank}, which is still computing elsewhere: it is the one "
                    "to look at; the waiting ranks are its victims.",
                    rank=state.rank,
                )
                if slow
                else _(
                    "Collectives complete only when every rank joins. The other ranks are "
                    "waiting for rank {rank}, which is blocked elsewhere: it is the one "
                    "to look at; the waiting ranks are its victims.",
                    rank=state.rank,
                ),
                culprit=rank_culprit(job, state),
                related=tuple(rank_culprit(job, s) for s in waiting[:4]),
                evidence=tuple(evidence),
                fixes=(*wait_fixes(wait, where), process_group_timeout(job)),
            )
