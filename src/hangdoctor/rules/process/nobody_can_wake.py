"""HD105 process.deadlock: a thread waits, without a timeout, on a queue, event or condition
that only another thread of its process could fill or set, and its process has no such thread:
it waits for itself, forever."""

from __future__ import annotations

from collections.abc import Iterable

from hangdoctor.analysis.frames import blame_frame, short_location
from hangdoctor.analysis.job import JobView
from hangdoctor.analysis.thread_waits import lone_waits
from hangdoctor.evidence import build as b
from hangdoctor.evidence.model import Bundle
from hangdoctor.rules.base import Example, Rule
from hangdoctor.rules.finding import Finding, Severity
from hangdoctor.rules.helpers import at, culprit, frames_of, kernel_words
from hangdoctor.taxonomy import Category


def _lone_get() -> Bundle:
    main = b.thread(
        10, b.frame(f"{b.STDLIB}/threading.py", 327, "Condition.wait",
                    local_vars={"timeout": ("None", None)}),
        b.frame(f"{b.STDLIB}/queue.py", 171, "Queue.get",
                local_vars={"block": ("True", None), "timeout": ("None", None)}),
        b.frame("train.py", 30, "main", code="item = results.get()"),
        name="MainThread", syscall="futex")
    status = b.thread(11, b.frame(f"{b.SITE}/hangdoctor/instrument/bootstrap/"
                                  "_hangdoctor_probe.py", 361, "_write_loop"),
                      name="hangdoctor-status", syscall="clock_nanosleep")
    return b.bundle(b.process(10, main, status))


def _get_with_a_producer() -> Bundle:
    job = _lone_get()
    process = job.snapshots[0].processes[0]
    producer = b.thread(12, b.frame("train.py", 50, "produce", code="item = make()"),
                        name="producer", state="R")
    grown = process.model_copy(update={"threads": (*process.threads, producer)})
    return b.bundle(grown)


def _event_with_timeout() -> Bundle:
    main = b.thread(
        20, b.frame(f"{b.STDLIB}/threading.py", 629, "Event.wait",
                    local_vars={"timeout": ("5.0", None)}),
        b.frame("train.py", 8, "main", code="ready.wait(5.0)"), name="MainThread",
        syscall="futex")
    return b.bundle(b.process(20, main))


def _pool_map() -> Bundle:
    main = b.thread(
        30, b.frame(f"{b.STDLIB}/threading.py", 327, "Condition.wait",
                    local_vars={"timeout": ("None", None)}),
        b.frame(f"{b.STDLIB}/threading.py", 629, "Event.wait",
                local_vars={"timeout": ("None", None)}),
        b.frame(f"{b.STDLIB}/multiprocessing/pool.py", 765, "ApplyResult.wait"),
        b.frame(f"{b.STDLIB}/multiprocessing/pool.py", 367, "Pool.map"),
        b.frame("prep.py", 45, "main", code="ids = pool.map(tokenize, corpus)"),
        name="MainThread", syscall="futex")
    return b.bundle(b.process(30, main))


class NobodyCanWake(Rule):
    """A wait only another thread could end, in a process that has no other thread."""

    id = "HD105"
    category = Category.PROCESS_DEADLOCK
    summary = "a thread waits on a queue, event or condition that nothing can ever fill or set"
    fires_when = (
        "a thread waits without a timeout in `Queue.get()`, `Event.wait()`, `Condition.wait()`, "
        "`Semaphore.acquire()` or `Barrier.wait()`, and no other thread of its process runs "
        "any of your code that could put, set, notify or release"
    )
    reads = "capture"
    specificity = 80
    fires_on = (Example("queue.get() with no other thread", _lone_get),)
    quiet_on = (Example("queue.get() while a producer thread runs", _get_with_a_producer),
                Example("Pool.map waiting on the pool's own event", _pool_map),
                Example("Event.wait(5.0) with a timeout", _event_with_timeout))

    def check(self, job: JobView) -> Iterable[Finding]:
        for wait in lone_waits(job):
            process, thread, primitive = wait.process, wait.thread, wait.primitive
            frame = blame_frame(frames_of(thread))
            if frame is None:
                continue
            where = short_location(frame)
            yield Finding(
                id=self.id, category=self.category, severity=Severity.ERROR,
                confidence=0.85,
                title=f"Waits forever: {primitive.what} at {where}, and no other thread "
                      f"could {primitive.waker}",
                explanation=(
                    f"{primitive.what} without a timeout returns only when another thread "
                    f"of the same process does its part ({primitive.waker}). "
                    f"{job.describe_process(process.pid)} has no other thread running your "
                    "code, so nothing ever will."),
                culprit=culprit(job, process, thread, frame),
                evidence=(f"{thread.comm or 'thread'} (tid {thread.tid}) waits in "
                          f"{primitive.what} at {at(frame)} ({kernel_words(thread)}), with "
                          "no timeout",
                          f"no other thread of {job.describe_process(process.pid)} runs "
                          "user code"),
                fixes=(f"Make sure something will {primitive.waker} before {where} waits: "
                       "start the producer thread (and keep it alive), or fill the queue "
                       "before reading it.",
                       f"Give the wait at {where} a timeout and handle it (e.g. "
                       "`queue.get(timeout=60)` raising queue.Empty) so that a missing "
                       "producer is an error, not a hang."),
            )
