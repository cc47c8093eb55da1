"""HD206 data.pipeline_stall: a child process that was to put results on a multiprocessing
queue died of an exception, and the process reading the queue waits for it forever.

`multiprocessing.Process` prints the traceback of an exception that ends its `run()` and exits
with code 1; nothing reaches the queue, and `Queue.get()` without a timeout in the parent
waits for an item no process is left to send (https://github.com/python/cpython/issues/87971).
The mechanism: a thread waits in a multiprocessing queue or connection, called from the user's
code without a timeout, and the output holds the traceback of a process whose outermost frame
is multiprocessing's `_bootstrap` and which raised in the user's code."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from hangdoctor.analysis.deaths import last_seen_states
from hangdoctor.analysis.frames import blame_frame, short_location
from hangdoctor.analysis.job import JobView
from hangdoctor.analysis.thread_waits import QueueRead, multiprocessing_read
from hangdoctor.analysis.tracebacks import Raised, tracebacks
from hangdoctor.evidence.model import (
    ProcessEvidence,
    ThreadEvidence,
)
from hangdoctor.i18n import _
from hangdoctor.rules.base import Rule
from hangdoctor.rules.confidence import Confidence
from hangdoctor.rules.finding import Finding
from hangdoctor.rules.helpers import culprit, frames_of, pointed_at, waits_without_timeout
from hangdoctor.rules.log_helpers import output_lines, raised_words
from hangdoctor.taxonomy import Category


def process_deaths(job: JobView) -> list[Raised]:
    """Tracebacks of multiprocessing child processes that died in the user's code."""
    return [r for r in tracebacks(output_lines(job)) if r.in_user_code and _in_child(r)]


def _in_child(raised: Raised) -> bool:
    outermost = raised.frames[-1] if raised.frames else None
    return (
        outermost is not None
        and outermost.file.replace("\\", "/").endswith("/multiprocessing/process.py")
        and outermost.function.split(".")[-1] == "_bootstrap"
    )


def _exited_children(job: JobView, pid: int) -> list[int]:
    """Children of `pid` that the timeline saw end (a zombie not yet reaped, or gone)."""
    seen = last_seen_states(job, pid)
    return sorted(child for child, state in seen.items() if state in ("zombie", "gone"))


def _readers(job: JobView) -> Iterator[tuple[ProcessEvidence, ThreadEvidence, QueueRead]]:
    for process in job.processes:
        for thread in process.threads:
            read = multiprocessing_read(thread)
            if read is not None:
                yield process, thread, read


class ProducerProcessDied(Rule):
    """a child process that fed a multiprocessing queue died; the reader waits for it

    Fires when: a thread waits without a timeout in a multiprocessing `Queue.get()` or
    `Connection.recv()` called from your code, and the output holds the traceback of a
    `multiprocessing.Process` that died of an exception in your code; names the line that raised

    Why: A `multiprocessing.Process` that dies of an exception prints its traceback and exits with
    code 1, but nothing reaches the queue it was to fill. The reader's `Queue.get()` or
    `Connection.recv()` without a timeout then waits for an item no process is left to send.

    Instead: Have each worker put its exception (or an error marker) on the queue in a `try/except`,
    and the reader raise it; or use `ProcessPoolExecutor`/`Pool`, which hand a worker's exception
    back to the caller; or read with `get(timeout=...)` and check the workers' `exitcode` when it
    expires.
    """

    id = "HD206"
    category = Category.DATA_PIPELINE_STALL
    reads = "capture"
    specificity = 89

    def check(self, job: JobView) -> Iterable[Finding]:
        deaths = process_deaths(job)
        if not deaths:
            return
        died = deaths[0]
        for process, thread, read in _readers(job):
            waiting_at = blame_frame(frames_of(thread)) or read.caller
            raised_at = died.location
            where = short_location(raised_at) if raised_at else _("its own code")
            waits = short_location(waiting_at)
            exited = _exited_children(job, process.pid)
            reader = culprit(job, process, thread, waiting_at)
            more = _(" ({count} processes died)", count=len(deaths)) if len(deaths) > 1 else ""
            yield self.finding(
                confidence=Confidence.STRONG,
                title=_(
                    "A child process that fed the queue died of {type} at {where}{more}; "
                    "{process} waits in {what} at {waits} for a result it will never send",
                    type=died.short_type,
                    where=where,
                    more=more,
                    process=job.describe_process(process.pid),
                    what=read.what,
                    waits=waits,
                ),
                explanation=_(
                    "The results come back through {what}. A "
                    "`multiprocessing.Process` raised {type}, printed its "
                    "traceback and exited with code 1 without putting its result; nothing "
                    "tells the reader, which waits without a timeout for an item no process "
                    "is left to send.",
                    what=read.what,
                    type=died.short_type,
                ),
                culprit=pointed_at(reader, raised_at),
                related=(reader,),
                evidence=(
                    _("log: a child process died: {raised}", raised=raised_words(died)),
                    waits_without_timeout(thread, read.what, waiting_at),
                    *(
                        (
                            _(
                                "children of pid {pid} that exited while it waited: {children}",
                                pid=process.pid,
                                children=", ".join(map(str, exited)),
                            ),
                        )
                        if exited
                        else ()
                    ),
                ),
                fixes=(
                    _(
                        "Fix what raised at {where} ({exception}): skip or repair "
                        "the bad input there, or catch it and log which input it was.",
                        where=where,
                        exception=died.short_type,
                    ),
                    _(
                        "Have each worker put its exception (or an error marker) on the queue "
                        "in `try/except`, and the reader raise it; or use "
                        "`ProcessPoolExecutor`/`Pool`, which hand a worker's exception back to "
                        "the caller."
                    ),
                    _(
                        "Read with a timeout at {waits} (`get(timeout=...)`) and check the "
                        "workers' `exitcode` when it expires.",
                        waits=waits,
                    ),
                ),
            )
            return
