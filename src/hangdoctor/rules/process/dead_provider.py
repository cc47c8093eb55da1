"""HD115 process.deadlock (or the category its sink decides): the wait-for graph ends at a
thread or process that died: only it would have ended the wait (set the event, released the
lock, put into the queue, answered on the pipe), and it is gone.

The sink of the graph decides (issue 27): the culprit is the dead provider, at the line that
raised when its exception is known, with the waiter and the chain that led there as evidence.
Its category comes from the sink table (`analysis.sink_category`): a deadlock when the last
wait of the chain is on a lock, event, queue or join; blocked I/O when it goes through a pipe,
FIFO or socket; a data stall when the training loop's input is what waits.
"""

from __future__ import annotations

from collections.abc import Iterable

from hangdoctor.analysis.deaths import Death, ended_at
from hangdoctor.analysis.frames import blame_frame, innermost_user_frame, short_location
from hangdoctor.analysis.job import JobView, thread_label
from hangdoctor.analysis.sink_category import sink_category
from hangdoctor.analysis.tracebacks import Raised
from hangdoctor.analysis.waitgraph import Sink, build_wait_graph
from hangdoctor.analysis.waits import describe_wait
from hangdoctor.evidence.model import ProcessEnd
from hangdoctor.i18n import _
from hangdoctor.rules.base import Rule
from hangdoctor.rules.confidence import Confidence
from hangdoctor.rules.finding import Culprit, Finding, Location, Severity
from hangdoctor.rules.helpers import at, culprit, frames_of
from hangdoctor.taxonomy import Category


def _dead_culprit(job: JobView, death: Death) -> Culprit:
    raised = death.raised
    if death.ended_by is not None:  # the culprit is the call that ended it, in its caller
        pid: int | None = death.ended_by.by_pid
        location = Location.of(ended_at(death.ended_by))
    else:
        pid = death.pid
        location = Location.of(raised.location) if raised is not None else None
    return Culprit(
        pid=pid,
        rank=job.rank(pid) if pid is not None else None,
        role=job.role(pid).value if pid is not None and job.process(pid) else None,
        thread=raised.thread if raised is not None and death.thread else None,
        location=location,
    )


class DeadProvider(Rule):
    """a wait that only a thread or process that died would have ended

    Fires when: following the job's wait-for graph from a waiting thread ends at a thread or process
    that died (its traceback recorded or in the output, a zombie child, a child that ended) and no
    live party is known to end the wait; names the line that raised

    Why: An event, lock, queue, pipe or result that one thread or process was to provide is never
    provided when that provider dies first: nothing tells the waiter, which waits without a timeout
    forever. The root cause is the death, not the wait.

    Instead: Catch exceptions in the provider and hand them to the waiter (put the error on the
    queue, set a failure flag, use `concurrent.futures`, whose `result()` re-raises); give the wait
    a timeout that checks whether the provider is still alive.
    """

    id = "HD115"
    category = Category.PROCESS_DEADLOCK
    reads = "capture"
    specificity = 85

    def check(self, job: JobView) -> Iterable[Finding]:
        graph = build_wait_graph(job)
        named: set[int] = set()
        for party in list(graph.waits):
            chain = graph.follow(party)
            if chain.sink is not Sink.DEAD:
                continue
            death = graph.dead[chain.end]
            if id(death) in named:
                continue
            process, thread = job.process(party[0]), job.thread(*party)
            if process is None or thread is None:
                continue
            frame = blame_frame(frames_of(thread))
            if frame is None or innermost_user_frame(frames_of(thread)) is None:
                continue  # a library's machinery (a pool worker, a queue's feeder) waiting
            named.add(id(death))
            yield self._finding(job, death, culprit(job, process, thread, frame), party)

    def _finding(
        self, job: JobView, death: Death, waiter: Culprit, party: tuple[int, int]
    ) -> Finding:
        process, thread = job.process(party[0]), job.thread(*party)
        assert process is not None and thread is not None
        frame = blame_frame(frames_of(thread))
        assert frame is not None  # check() names only waiters with a line of their own
        wait = describe_wait(job, process, thread)
        raised = death.raised
        died_at = short_location(raised.location) if raised and raised.location else None
        if death.ended_by is not None:
            died_at = short_location(ended_at(death.ended_by))
        gone = death.words(job)
        evidence = [
            _(
                "{thread} of {process} waits at {place}: {wait}",
                thread=thread_label(thread),
                process=job.describe_process(process.pid),
                place=at(frame),
                wait=wait.summary,
            ),
            _("{gone} ({source})", gone=gone, source=_(death.source)),
        ]
        if died_at is not None:
            title = _(
                "Waits forever at {waits}: {gone}, at {where}, before it could end the wait",
                waits=short_location(frame),
                gone=gone,
                where=died_at,
            )
            first = (
                _ended_fix(death.ended_by, died_at)
                if death.ended_by is not None
                else _(
                    "Fix the error at {where}. A library only logs an exception raised in a "
                    "callback, so what the callback was still to do (complete another future, "
                    "wake a waiter) is never done: catch errors in the callback and pass them "
                    "on (`future.set_exception(error)`).",
                    where=died_at,
                )
                if raised is not None and raised.callback is not None
                else _library_death_fix(raised, died_at, short_location(frame))
                if raised is not None and not raised.in_user_code
                else _("Fix the error at {where}.", where=died_at)
            )
            fixes: tuple[str, ...] = (
                first,
                _(
                    "Make the provider's failure reach the waiter at {waits}: catch the "
                    "exception and pass it on (put it on the queue, set a failure flag), or run "
                    "the work through `concurrent.futures`, whose `result()` re-raises it.",
                    waits=short_location(frame),
                ),
            )
            found = _dead_culprit(job, death)
        else:
            title = _(
                "Waits forever at {waits}: {gone}",
                waits=short_location(frame),
                gone=gone,
            )
            fixes = (
                _(
                    "Find out why the provider ended (its exit code, a signal, the kernel log "
                    "for the OOM killer), and give the wait at {waits} a timeout that checks "
                    "whether the provider is alive.",
                    waits=short_location(frame),
                ),
            )
            found = waiter
        return Finding(
            id=self.id,
            category=sink_category(job, party) or self.category,
            severity=Severity.ERROR,
            confidence=Confidence.STRONG,
            title=title,
            explanation=_(
                "Following who could end each wait leads to a provider that is gone: "
                "{gone}. It was the one to end the wait at {waits} ({wait}), and "
                "nothing tells the waiter that it never will.",
                gone=gone,
                waits=short_location(frame),
                wait=wait.summary,
            ),
            culprit=found,
            related=(waiter,) if found is not waiter else (),
            evidence=tuple(evidence),
            fixes=fixes,
        )


def _ended_fix(end: ProcessEnd, where: str) -> str:
    """How not to end the provider: a pool left with tasks still running, else terminate()."""
    if end.via_file is not None and end.function.startswith("Pool."):
        return _(
            "Leaving `with Pool(...)` at {where} terminated the pool's workers (Pool.__exit__ "
            "calls terminate()) while they still ran its tasks: take every result (get()) "
            "inside the block, or call pool.close() and pool.join() before leaving it.",
            where=where,
        )
    return _(
        "Do not end a process with terminate() or kill() at {where} while it may "
        "hold a lock or queue it shares, or sit at a barrier: ask it to stop (a "
        "sentinel on its queue, an event) and join it; the documentation warns "
        "that terminating such a process can leave the others deadlocked.",
        where=where,
    )


#: Where a process rebuilds what another sent it: an error there is in what was sent.
_UNPICKLING = (("multiprocessing/connection.py", "recv"), ("multiprocessing/queues.py", "get"))


def _library_death_fix(raised: Raised, where: str, waits: str) -> str:
    """A library's own thread died (Pool's result handler): what the job gave it is at fault,
    and the library will not tell the waiter."""
    unpickling = any(
        f.file.replace("\\", "/").endswith(path) and f.function.split(".")[-1] == function
        for f in raised.frames
        for path, function in _UNPICKLING
    )
    if unpickling:
        return _(
            "An object another process sent could not be rebuilt here ({type}: {message}, at "
            "{where}), and the library's thread that received it died: an exception class "
            "whose __init__ takes other arguments than those it passes to "
            "Exception.__init__ cannot be unpickled. Pass every argument to "
            "super().__init__(...) (or define __reduce__), or raise a built-in exception "
            "type across processes.",
            type=raised.short_type,
            message=raised.message,
            where=where,
        )
    return _(
        "A library's own thread died of {type}: {message} (at {where}) and the library does "
        "not tell the waiter at {waits}: find what the job handed it, and give that wait a "
        "timeout (`.get(timeout=...)`).",
        type=raised.short_type,
        message=raised.message,
        where=where,
        waits=waits,
    )
