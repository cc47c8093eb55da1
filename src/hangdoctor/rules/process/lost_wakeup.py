"""HD118 process.deadlock: an asyncio event loop sleeps in its selector for ever because another
thread scheduled its wake-up with `call_soon` (or completed a future with `set_result`, which
calls it) instead of `call_soon_threadsafe`.

`call_soon` appends the callback to the loop's ready queue without writing to the loop's
self-pipe, so a loop asleep in `select()` with no timer left is never woken to run it
(https://docs.python.org/3/library/asyncio-dev.html#concurrency-and-multithreading). While
something else wakes the loop now and then (a timer, I/O), the callbacks run late and the bug
hides; once the loop waits only for those futures, the job hangs. The instrumentation notes
each line that calls `call_soon` from a thread that is not the running loop's, so the finding
names that line, in the thread that ran it.
"""

from __future__ import annotations

from collections.abc import Iterable

from hangdoctor.analysis.frames import blame_frame, in_function, python_frames, short_location
from hangdoctor.analysis.job import JobView, thread_label
from hangdoctor.evidence.model import (
    Frame,
    OffLoopCall,
    ProcessEvidence,
    ThreadEvidence,
)
from hangdoctor.i18n import _
from hangdoctor.rules.base import Rule
from hangdoctor.rules.confidence import Confidence
from hangdoctor.rules.finding import Culprit, Finding, Location
from hangdoctor.rules.helpers import at, culprit, frames_of
from hangdoctor.taxonomy import Category


def _asleep_in_selector(thread: ThreadEvidence) -> bool:
    """Whether the thread runs an asyncio event loop that sleeps in its selector."""
    frames = python_frames(thread.python.frames if thread.python else ())
    return (
        bool(frames)
        and frames[0].function.split(".")[-1] == "select"
        and in_function(frames, "asyncio/base_events.py", {"_run_once"})
    )


class LostWakeup(Rule):
    """an asyncio loop never woken: another thread scheduled on it without thread safety

    Fires when: the job hung, a thread's asyncio event loop sleeps in its selector, and the
    instrumentation saw another thread of that process call the loop's `call_soon` (directly, or
    through `Future.set_result`); names that line

    Why: `loop.call_soon` and a future's `set_result` are not thread-safe: from another thread they
    queue the callback without waking the loop. A loop asleep in `select()` with no timer left never
    runs it, and the coroutine awaiting the future waits for ever; while timers or I/O still wake
    the loop, the callbacks merely run late, so the bug hides until the end of the work.

    Instead: From another thread, hand work to the loop with `loop.call_soon_threadsafe(...)`
    (`loop.call_soon_threadsafe(fut.set_result, value)`), or use `asyncio.run_coroutine_threadsafe`
    or `loop.run_in_executor`, which do so.
    """

    id = "HD118"
    category = Category.PROCESS_DEADLOCK
    reads = "capture"
    specificity = 92

    def check(self, job: JobView) -> Iterable[Finding]:
        record = job.record
        if record is None or record.hang_declared_s is None or not record.offloop_calls:
            return
        for process in job.processes:
            calls = [c for c in record.offloop_calls if c.pid == process.pid]
            loop = next((t for t in process.threads if _asleep_in_selector(t)), None)
            if calls and loop is not None:
                yield self._finding(job, process, loop, calls)

    def _finding(
        self,
        job: JobView,
        process: ProcessEvidence,
        loop: ThreadEvidence,
        calls: list[OffLoopCall],
    ) -> Finding:
        first = calls[0]
        site = Frame(file=first.file, line=first.line, function=first.function)
        where = short_location(site)
        waiting = blame_frame(frames_of(loop))
        tasks = [t for t in job.bundle.async_tasks if t.pid == process.pid and not t.done]
        evidence = [
            _(
                "instrumentation: thread {thread} scheduled work on the event loop from outside "
                "the loop's thread (`call_soon`, or `set_result`, which calls it) at {place}",
                thread=c.thread,
                place=at(Frame(file=c.file, line=c.line, function=c.function)),
            )
            for c in calls[:3]
        ]
        evidence.append(
            _(
                "{thread} of {process} sleeps in the event loop's selector at {place}, with no "
                "timer left to wake it",
                thread=thread_label(loop),
                process=job.describe_process(process.pid),
                place=at(waiting) if waiting is not None else _("its event loop"),
            )
        )
        if tasks:
            awaiting = tasks[0].awaiting[0] if tasks[0].awaiting else None
            evidence.append(
                _(
                    "{count} asyncio task(s) wait, the first at {place}",
                    count=len(tasks),
                    place=at(awaiting) if awaiting is not None else _("an await"),
                )
            )
        return self.finding(
            confidence=Confidence.STRONG,
            title=_(
                "Lost wake-up: thread {thread} schedules work on the asyncio loop at {where} "
                "without `call_soon_threadsafe`; the loop sleeps in its selector and never "
                "runs it",
                thread=first.thread,
                where=where,
            ),
            explanation=_(
                "`call_soon` (which a future's `set_result` calls) queues the callback but "
                "does not wake the loop; only `call_soon_threadsafe` writes to the loop's "
                "self-pipe. The loop now waits in `select()` with no timer left, so the "
                "callbacks queued from thread {thread} never run and the tasks awaiting those "
                "futures wait for ever.",
                thread=first.thread,
            ),
            culprit=Culprit(
                pid=process.pid,
                rank=job.rank(process.pid),
                role=job.role(process.pid).value,
                thread=first.thread,
                location=Location.of(site),
            ),
            related=(culprit(job, process, loop, waiting),),
            evidence=tuple(evidence),
            fixes=(
                _(
                    "At {where}, hand the result to the loop's own thread: "
                    "`loop.call_soon_threadsafe(fut.set_result, value)` (keep the loop from "
                    "`asyncio.get_running_loop()` where the future is created).",
                    where=where,
                ),
                _(
                    "Or run the blocking work with `await loop.run_in_executor(...)`, or submit "
                    "coroutines from the thread with `asyncio.run_coroutine_threadsafe`."
                ),
            ),
        )
