"""HD207 data.pipeline_stall (or process.deadlock): asyncio tasks that fed a waiting task died
of an exception nobody retrieved, and the event loop waits for good.

An exception that ends an asyncio task is stored in the task; asyncio reports it only when the
task object is freed ("Task exception was never retrieved"), and a program that keeps its tasks
in a list never frees them. The consumer, suspended in `await queue.get()`, is on no thread's
stack: py-spy shows only the loop's selector. Under `hangdoctor run` the instrumentation reads
the tasks (`Bundle.async_tasks`). The mechanism: a thread of the process runs the event loop,
a pending task awaits in one of asyncio's primitives from the user's code, and tasks of that
process finished with an exception in the user's code that nothing read. Data when the loop is
driven for a `for` loop's iterator (an async batch loader), else a deadlock."""

from __future__ import annotations

from collections.abc import Iterable

from hangdoctor.analysis.frames import (
    innermost_user_frame,
    python_frames,
    short_location,
)
from hangdoctor.analysis.job import JobView
from hangdoctor.analysis.thread_waits import waits_in_iterator
from hangdoctor.evidence.model import AsyncTask, Frame, ThreadEvidence
from hangdoctor.i18n import _
from hangdoctor.rules.base import Rule
from hangdoctor.rules.confidence import Confidence
from hangdoctor.rules.finding import Finding, Severity
from hangdoctor.rules.helpers import at, culprit, frames_of, pointed_at
from hangdoctor.taxonomy import Category

_PRIMITIVES = ("queues.py", "locks.py", "tasks.py", "futures.py")  # what a task awaits in


def _event_loop_frame(thread: ThreadEvidence) -> Frame | None:
    """The outermost asyncio frame that runs the loop (`run_until_complete`, `run`), whose
    caller is the user's code, when the thread is inside an event loop."""
    frames = python_frames(thread.python.frames if thread.python else ())
    loop = [
        f
        for f in frames
        if f.file.replace("\\", "/").endswith(("asyncio/base_events.py", "asyncio/runners.py"))
    ]
    if not any(f.function.split(".")[-1] == "run_forever" for f in loop):
        return None
    return loop[-1]


def _awaits_in_primitive(task: AsyncTask) -> Frame | None:
    """The user's line a pending task is suspended at, when it awaits one of asyncio's
    primitives (a queue, an event, a lock, a future)."""
    if task.done or not task.awaiting:
        return None
    innermost = task.awaiting[0].file.replace("\\", "/")
    in_primitive = "/asyncio/" in innermost and innermost.endswith(_PRIMITIVES)
    if not in_primitive and innermost_user_frame(task.awaiting[:1]) is None:
        return None  # suspended in a library's own await (a client, a server)
    return innermost_user_frame(task.awaiting)


def _died(task: AsyncTask) -> Frame | None:
    if not task.done or task.exception is None or task.retrieved:
        return None
    return innermost_user_frame(task.raised)


class AsyncProducerDied(Rule):
    """asyncio tasks that fed a waiting task died; the event loop waits for good

    Fires when: under `run`, a thread runs an asyncio event loop, a task of its process is suspended
    in `await` on a queue, event, lock or future from your code, and tasks of that process ended
    with an exception raised in your code that nothing retrieved; data.pipeline_stall when the loop
    is driven for a `for` loop's iterator, else process.deadlock

    Why: An exception that ends an asyncio task is stored in the task and reported only when the
    task object is freed; a program that keeps its tasks in a list never frees them, so nothing is
    printed. A task awaiting a queue, event or future those tasks were to fill waits for good, and
    the event loop idles in its selector.

    Instead: Await the producer tasks (`asyncio.gather(*tasks)`, or an `asyncio.TaskGroup`, which
    cancels the others and raises the first error), or add a done callback that passes the exception
    on; give waits a timeout (`await asyncio.wait_for(queue.get(), 60)`).
    """

    id = "HD207"
    category = Category.DATA_PIPELINE_STALL
    reads = "capture"
    specificity = 89

    def check(self, job: JobView) -> Iterable[Finding]:
        tasks = job.bundle.async_tasks
        if not tasks:
            return
        for process in job.processes:
            looping = next(
                ((t, f) for t in process.threads if (f := _event_loop_frame(t)) is not None), None
            )
            mine = [t for t in tasks if t.pid == process.pid]
            waiting = [(t, f) for t in mine if (f := _awaits_in_primitive(t)) is not None]
            dead = [(t, f) for t in mine if (f := _died(t)) is not None]
            if looping is None or not waiting or not dead:
                continue
            thread, loop_frame = looping
            task, awaits_at = waiting[0]
            died, raised_at = dead[0]
            data = waits_in_iterator(thread, loop_frame)
            category = Category.DATA_PIPELINE_STALL if data else Category.PROCESS_DEADLOCK
            driver = culprit(job, process, thread)
            where = short_location(raised_at)
            more = _(" (and {count} more)", count=len(dead) - 1) if len(dead) > 1 else ""
            exception = died.exception or _("an exception")
            yield Finding(
                id=self.id,
                category=category,
                severity=Severity.ERROR,
                confidence=Confidence.STRONG,
                title=_(
                    "asyncio task {task}{more} died of {exception} at {where}, and nothing read "
                    "it; task {waiting} waits at {waits_at} for what it would have produced",
                    task=died.name,
                    more=more,
                    exception=exception.split(":")[0],
                    where=where,
                    waiting=task.name,
                    waits_at=short_location(awaits_at),
                ),
                explanation=_(
                    "The exception that ended the task is stored in the task, and asyncio "
                    "reports it only when the task object is freed; the program still holds "
                    "it, so nothing was printed. Task {task} waits without a timeout in "
                    "`{code}`, and the event loop, {driven}, has "
                    "nothing else to do: it waits in its selector for good.",
                    task=task.name,
                    code=(awaits_at.code or "await").strip(),
                    driven=_("driven for the training loop") if data else _("run by this thread"),
                ),
                culprit=pointed_at(driver, awaits_at),
                related=(driver,),
                evidence=(
                    _("task {task} is suspended at {place}", task=task.name, place=at(awaits_at))
                    + (
                        _(" (in {function})", function=task.awaiting[0].function)
                        if task.awaiting
                        else ""
                    ),
                    *(
                        _(
                            "task {task} ended with {exception} at {place}, never retrieved",
                            task=t.name,
                            exception=t.exception,
                            place=at(f),
                        )
                        for t, f in dead[:4]
                    ),
                    _(
                        "{thread} (tid {tid}) runs the event loop at {place}",
                        thread=thread.comm or _("thread"),
                        tid=thread.tid,
                        place=at(innermost_user_frame(frames_of(thread))),
                    ),
                ),
                fixes=(
                    _(
                        "Fix what raised at {where} ({exception}): skip or repair "
                        "the bad input there, or catch it and log which input it was.",
                        where=where,
                        exception=exception.split(":")[0],
                    ),
                    _(
                        "Await the producer tasks (`asyncio.gather(*tasks)`, or a `TaskGroup`, "
                        "which cancels the others and raises the first error), or add a done "
                        "callback that puts the exception on the queue, so that a failure ends "
                        "the run instead of hanging it."
                    ),
                    _(
                        "Give the wait at {where} a timeout (`asyncio.wait_for(queue.get(), 60)`).",
                        where=short_location(awaits_at),
                    ),
                ),
            )
            return
