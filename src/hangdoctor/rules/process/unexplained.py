"""HD199 process.unexplained: the job stopped and no specific rule explains why. A hang report
still names where the job is stuck: the thread everything waits on, its innermost line in the
user's code, and what the kernel says it waits in, with low confidence."""

from __future__ import annotations

from collections.abc import Iterable

from hangdoctor.analysis.frames import (
    blame_frame,
    innermost_user_frame,
    runs_python_of_its_own,
    short_location,
)
from hangdoctor.analysis.job import JobView, thread_label
from hangdoctor.analysis.roles import Role
from hangdoctor.analysis.waitgraph import Chain, Party, Sink, build_wait_graph
from hangdoctor.analysis.waits import describe_wait
from hangdoctor.evidence.model import ProcessEvidence, ThreadEvidence
from hangdoctor.i18n import _
from hangdoctor.rules.base import Rule
from hangdoctor.rules.confidence import Confidence
from hangdoctor.rules.finding import Finding
from hangdoctor.rules.helpers import at, culprit, frames_of, kernel_words, main_thread
from hangdoctor.taxonomy import Category

#: A dump sees a stall when the whole tree used less than this share of one CPU.
_IDLE_SHARE = 0.05
# Where to look first: the ranks, then the main process, then other children.
_ROLE_ORDER = {
    Role.RANK: 0,
    Role.MAIN: 1,
    Role.CHILD: 2,
    Role.LAUNCHER: 3,
    Role.DATALOADER_WORKER: 4,
    Role.OTHER: 5,
}


def _declared_hang(job: JobView) -> bool:
    record = job.record
    return record is not None and record.hang_declared_s is not None


def _tree_idle(job: JobView) -> bool:
    """A one-off capture (dump) of a tree that did nothing between its snapshots: no process
    used the CPU and no main thread moved."""
    if job.record is not None or len(job.bundle.snapshots) < 2:
        return False
    for process in job.processes:
        share = job.process_cpu_share(process.pid)
        if share is None or share >= _IDLE_SHARE:
            return False
    return True


def _candidates(job: JobView) -> list[ProcessEvidence]:
    return sorted(
        (p for p in job.processes if p.stacks_sampled),
        key=lambda p: (_ROLE_ORDER[job.role(p.pid)], job.rank(p.pid) or 0, p.pid),
    )


def _located(job: JobView, party: Party) -> tuple[ProcessEvidence, ThreadEvidence] | None:
    process, thread = job.process(party[0]), job.thread(*party)
    return (process, thread) if process is not None and thread is not None else None


def _name(job: JobView, party: Party) -> str:
    found = _located(job, party)
    if found is None:
        return _("thread {tid} of pid {pid}", tid=party[1], pid=party[0])
    return _(
        "{thread} of {process}",
        thread=thread_label(found[1]),
        process=job.describe_process(found[0].pid),
    )


def _sink_words(chain: Chain) -> str:
    if chain.sink is Sink.CYCLE:
        return _("the waits form a cycle: {reason}", reason=chain.reason)
    if chain.sink is Sink.NOBODY:
        return _("nothing in the job can end its wait: {reason}", reason=chain.reason)
    if chain.sink is Sink.OUTSIDE:
        return _("only something outside the job can end its wait: {reason}", reason=chain.reason)
    if chain.sink is Sink.RUNNING:
        return _("it is running on a CPU without making progress")
    return _("the capture does not show what would end its wait")


def _start(job: JobView) -> tuple[ProcessEvidence, ThreadEvidence] | None:
    """Where to start following waits: the first process's main thread when it runs the
    user's code, else its thread that does (a framework may run the training function in a
    thread of its own: Ray Train's workers do), else the first main thread with Python."""
    fallback = None
    for process in _candidates(job):
        main = main_thread(process)
        threads = [main] if main is not None else []
        threads += [t for t in process.threads if t is not main and runs_python_of_its_own(t)]
        for thread in threads:
            if innermost_user_frame(frames_of(thread)) is not None:
                return process, thread
        if fallback is None and main is not None and blame_frame(frames_of(main)) is not None:
            fallback = process, main
    return fallback


class Unexplained(Rule):
    """the job is stuck and no specific rule explains why; where it waits

    Fires when: the job hung (or a dump found the whole tree idle) and no other rule found an error:
    names the thread everything waits on (following the job's wait-for graph: a lock's holder, a
    child, a pipe's other end, a joined thread, whoever could fill a queue), its line in your code,
    what it waits in and why nothing ends the wait; low confidence

    Why: When no rule recognises the mechanism of a hang, the thread that everything waits on is
    still the place to start: following each wait to whoever could end it (a lock's holder, a child,
    a pipe's other end, a joined thread, a queue's producers) leads there. A wait with no timeout at
    that point is what turns a slow or lost peer into a hang.

    Instead: Give the wait at the named line a timeout so that a stall raises an error
    (`q.get(timeout=...)`, `future.result(timeout=...)`, `proc.wait(timeout=...)`); look at native
    frames with `hangdoctor dump PID --native`; `faulthandler.dump_traceback_later(600)` prints
    every thread's stack when a step takes too long.
    """

    id = "HD199"
    category = Category.PROCESS_UNEXPLAINED
    reads = "capture"
    fallback = True
    specificity = 0

    def check(self, job: JobView) -> Iterable[Finding]:
        if not (_declared_hang(job) or _tree_idle(job)):
            return
        start = _start(job)
        if start is None:
            return
        graph = build_wait_graph(job)
        chain = graph.follow((start[0].pid, start[1].tid))
        parties = [found for party in chain.parties if (found := _located(job, party))]
        process, thread = parties[-1]
        wait = describe_wait(job, process, thread)
        frame = blame_frame(frames_of(thread))
        where = short_location(frame) if frame is not None else _("an unknown place")
        evidence = [
            _(
                "{process}, {thread}: {wait}",
                process=job.describe_process(p.pid),
                thread=thread_label(t),
                wait=describe_wait(job, p, t).summary,
            )
            for p, t in parties
        ]
        evidence += [
            _(
                "{waiter} waits for {waited}, which {why}",
                waiter=_name(job, e.waiter),
                waited=_name(job, e.waited),
                why=e.why,
            )
            for e in chain.edges
        ]
        evidence.append(
            _(
                "{process} is at {place} ({kernel})",
                process=job.describe_process(process.pid),
                place=at(frame),
                kernel=kernel_words(thread),
            )
        )
        evidence.append(_("why the wait does not end: {reason}", reason=chain.reason))
        yield self.finding(
            confidence=Confidence.HINT
            if chain.sink in (Sink.NOBODY, Sink.CYCLE)
            else Confidence.GUESS,
            title=_("Stuck at {where}: {wait}", where=where, wait=wait.summary),
            explanation=_(
                "No rule recognised the mechanism, but the job's wait-for graph says "
                "who everyone waits for: following each wait to whoever could end it "
                "leads to the thread below, and {sink}. Start there.",
                sink=_sink_words(chain),
            ),
            culprit=culprit(job, process, thread, frame),
            related=tuple(culprit(job, p, t) for p, t in parties[:-1]),
            evidence=tuple(evidence),
            fixes=(
                _(
                    "Look at {where}: what it waits for ({wait}) and who should "
                    "provide it; give that wait a timeout so a stall raises an error instead.",
                    where=where,
                    wait=wait.summary,
                ),
                _(
                    "For native frames (C/C++ extensions, CUDA, NCCL) run `hangdoctor dump PID "
                    "--native` on the stuck process."
                ),
                _(
                    "If you can reproduce it, `python -X faulthandler` plus "
                    "`faulthandler.dump_traceback_later(600)` prints every thread's stack when a "
                    "step takes too long."
                ),
            ),
        )
