"""HD119 process.deadlock: a rank outside the collective its peers wait in is itself waiting for
one of those peers (a file lock it holds, a pipe or socket it should answer, a queue it should
fill): the peer waits for the rank to join, the rank waits for the peer to act. Neither goes on;
from outside it looks like a straggler, but no amount of waiting ends it."""

from __future__ import annotations

from collections.abc import Iterable

from hangdoctor.analysis.frames import short_location
from hangdoctor.analysis.job import JobView, thread_label
from hangdoctor.analysis.ranks import RankState, rank_list, rank_view
from hangdoctor.analysis.waitgraph import Edge, build_wait_graph
from hangdoctor.analysis.waits import describe_wait
from hangdoctor.i18n import _
from hangdoctor.rules.base import Rule
from hangdoctor.rules.confidence import Confidence
from hangdoctor.rules.distributed._ranks import describe_group, rank_culprit
from hangdoctor.rules.finding import Finding
from hangdoctor.rules.helpers import at
from hangdoctor.taxonomy import Category


def _waits_for_a_waiting_peer(
    job: JobView, state: RankState, waiting: list[RankState]
) -> tuple[Edge, RankState] | None:
    """The edge by which the rank's thread waits for a peer that waits in the collective."""
    if state.process is None or state.thread is None:
        return None
    peers = {s.process.pid: s for s in waiting if s.process is not None}
    edges = build_wait_graph(job).edges.get((state.process.pid, state.thread.tid), [])
    return next(((e, peers[e.waited[0]]) for e in edges if e.waited[0] in peers), None)


class CrossRankDeadlock(Rule):
    """a rank outside the collective waits for a peer that waits in the collective for it

    Fires when: the other ranks wait in one collective, and the rank that is in none waits for
    one of them (a file lock it holds, a pipe or socket it must answer); says what the rank waits
    for and which peer holds it

    Why: A collective completes only when every rank joins it, so a peer inside it does nothing
    else until the last rank arrives. When that last rank first waits for the peer (a lock taken
    before the collective and released after it, a lock held across a generator's `yield`, a
    reply the peer sends only after the step), each waits for the other and the job stops for
    good: the rank is not slow, it is deadlocked.

    Instead: Release what the peers share before entering a collective (leave the `with lock:`
    block before the step, never `yield` inside it), take shared locks in the same order on every
    rank, or do the shared work on one rank and `barrier()` around it; give the lock a timeout
    (`filelock.FileLock(path, timeout=...)`) so that the cycle fails loudly.
    """

    id = "HD119"
    category = Category.PROCESS_DEADLOCK
    reads = "ranks"
    specificity = 95

    def check(self, job: JobView) -> Iterable[Finding]:
        view = rank_view(job)
        waiting = [s for s in view.alive if s.in_collective]
        outside = [s for s in view.alive if not s.in_collective and not s.in_start_up]
        if not waiting or not outside:
            return
        for state in outside:
            found = _waits_for_a_waiting_peer(job, state, waiting)
            if found is None or state.process is None or state.thread is None:
                continue
            edge, peer = found
            wait = describe_wait(job, state.process, state.thread)
            where = short_location(state.site) if state.site else _("its current line")
            yield self.finding(
                confidence=Confidence.STRONG if edge.certain else Confidence.FAIR,
                title=_(
                    "Deadlock across ranks: rank {rank} waits at {where} for rank {peer}, "
                    "which waits in {call} for rank {rank}",
                    rank=state.rank,
                    where=where,
                    peer=peer.rank,
                    call=peer.doing or _("a collective"),
                ),
                explanation=_(
                    "Rank {rank} is not in the collective its peers wait in: it is {wait}, and "
                    "what ends that wait is rank {peer} ({why}). Rank {peer} is inside the "
                    "collective, which returns only once rank {rank} joins it. Each waits for "
                    "the other, so neither will go on.",
                    rank=state.rank,
                    wait=wait.summary,
                    peer=peer.rank,
                    why=edge.why,
                ),
                culprit=rank_culprit(job, state),
                related=(rank_culprit(job, peer),),
                evidence=(
                    describe_group(waiting),
                    _(
                        "rank {rank}, {thread}: {wait} at {place}",
                        rank=state.rank,
                        thread=thread_label(state.thread),
                        wait=wait.summary,
                        place=at(state.site),
                    ),
                    _(
                        "rank {peer} {why}, and waits in the collective for {ranks}",
                        peer=peer.rank,
                        why=edge.why,
                        ranks=rank_list([state]),
                    ),
                ),
                fixes=(
                    _(
                        "Release what the ranks share before a collective: leave the `with` block "
                        "of a lock before the step, and never `yield` or return data from inside "
                        "it (a generator that yields under a lock holds it while the consumer "
                        "trains)."
                    ),
                    _(
                        "Take shared locks in the same order on every rank, or do the shared work "
                        "on one rank between two `barrier()` calls; give the lock a timeout "
                        "(`filelock.FileLock(path, timeout=60)`) so that a cycle raises."
                    ),
                ),
            )
