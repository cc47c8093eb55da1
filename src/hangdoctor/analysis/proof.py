"""A hang proven from one look at the stacks, before any threshold (issue 27).

The threshold exists because silence proves nothing: a job may be computing, or waiting for a
slow disk. Some waits, though, can never end, and the wait-for graph shows it: a thread waits
for itself (a lock it holds), for a provider that died, for a cycle of waiters, or for no one
left in the job. When every top-level process of the job (the script, or each rank) waits in
such a chain, the job is hung, whatever the threshold says.

Only chains that hold whatever happens next count: every edge certain (no thread that merely
could still put into a queue), none between ranks (a rank not yet at a collective may still
come), no wait that a process outside the job could end (a FIFO anyone may open), and no
thread on the chain given a timeout anywhere in its stack (a `get(timeout=5)` whose caller then
raises, as a job may choose to). A wait that only a signal
handler would end is taken as stuck, as the threshold would take it.
"""

from __future__ import annotations

from hangdoctor.analysis.frames import runs_user_code
from hangdoctor.analysis.job import JobView
from hangdoctor.analysis.thread_waits import waits_with_timeout
from hangdoctor.analysis.waitgraph import Chain, Party, Sink, WaitGraph, build_wait_graph
from hangdoctor.evidence.model import ProcessEvidence
from hangdoctor.i18n import _

#: The sinks that say a wait can never end.
PROVING = frozenset({Sink.NOBODY, Sink.DEAD, Sink.CYCLE})


def _main_thread_party(process: ProcessEvidence) -> Party | None:
    main = next((t for t in process.threads if t.tid == process.pid), None)
    if main is None or not runs_user_code(main):
        return None
    return (process.pid, main.tid)


def top_level(job: JobView) -> list[Party]:
    """The main threads of the job's top-level user processes: those running the user's code
    whose parent does not (the script under `python`, each rank under a launcher), not the
    workers and helpers they started."""
    users = {
        p.pid: (p, party)
        for p in job.processes
        if not p.outside_job and (party := _main_thread_party(p)) is not None
    }
    return [party for process, party in users.values() if process.ppid not in users]


def _holds(job: JobView, graph: WaitGraph, chain: Chain) -> bool:
    """Whether the chain stays stuck whatever happens next."""
    if chain.sink is Sink.DEAD and graph.edges.get(chain.end):
        return False  # a death explains the wait, but a live thread could still end it
    return (
        chain.sink in PROVING
        and all(e.certain and e.lasting for e in chain.edges)
        and not any(p in graph.unprovable for p in chain.parties)
        and not any(_timed(job, p) for p in chain.parties)
    )


def _timed(job: JobView, party: Party) -> bool:
    thread = job.thread(*party)
    return thread is None or waits_with_timeout(thread)


def proven_hang(job: JobView) -> str | None:
    """Why the job can never go on, when the stacks prove it; else None."""
    graph = build_wait_graph(job)
    parties = top_level(job)
    if not parties:
        return None
    reasons = []
    for party in parties:
        if party not in graph.waits:
            return None
        chain = graph.follow(party)
        if not _holds(job, graph, chain):
            return None
        reasons.append(
            _(
                "{process} can never go on: {reason}",
                process=job.describe_process(party[0]),
                reason=chain.reason,
            )
        )
    return "; ".join(reasons)
