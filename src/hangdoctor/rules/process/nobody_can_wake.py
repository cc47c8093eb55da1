"""HD105 process.deadlock: a thread waits, without a timeout, on a queue, event or condition
that only another thread of its process could fill or set, and its process has no such thread:
it waits for itself, forever."""

from __future__ import annotations

from collections.abc import Iterable

from hangdoctor.analysis.frames import blame_frame, short_location
from hangdoctor.analysis.job import JobView, thread_label
from hangdoctor.analysis.thread_waits import LoneWait, at_exit, lone_waits
from hangdoctor.evidence import build as b
from hangdoctor.evidence.model import Bundle, Frame, ThreadEvidence
from hangdoctor.rules.base import Example, Rule
from hangdoctor.rules.finding import Finding, Severity
from hangdoctor.rules.helpers import at, culprit, frames_of, kernel_words
from hangdoctor.rules.thread_deaths import died_in, thread_deaths
from hangdoctor.taxonomy import Category


def _lone_get() -> Bundle:
    main = b.thread(
        10,
        b.frame(
            f"{b.STDLIB}/threading.py",
            327,
            "Condition.wait",
            local_vars={"timeout": ("None", None)},
        ),
        b.frame(
            f"{b.STDLIB}/queue.py",
            171,
            "Queue.get",
            local_vars={"block": ("True", None), "timeout": ("None", None)},
        ),
        b.frame("train.py", 30, "main", code="item = results.get()"),
        name="MainThread",
        syscall="futex",
    )
    status = b.thread(
        11,
        b.frame(
            f"{b.SITE}/hangdoctor/instrument/bootstrap/_hangdoctor_writer.py", 59, "_write_loop"
        ),
        name="hangdoctor-status",
        syscall="clock_nanosleep",
    )
    return b.bundle(b.process(10, main, status))


def _worker_waits(tid: int, thread_object: int) -> ThreadEvidence:
    return b.thread(
        tid,
        b.frame(
            f"{b.STDLIB}/threading.py",
            327,
            "Condition.wait",
            local_vars={"timeout": ("None", None)},
        ),
        b.frame(
            f"{b.STDLIB}/threading.py", 629, "Event.wait", local_vars={"timeout": ("None", None)}
        ),
        b.frame("swa.py", 35, "SWAWriter.run", code="self.training_done.wait()"),
        b.frame(
            f"{b.STDLIB}/threading.py",
            1045,
            "Thread._bootstrap_inner",
            local_vars={"self": ("<SWAWriter>", thread_object)},
        ),
        name="swa-writer",
        syscall="futex",
    )


def _join_before_set(*, same_thread: bool = True) -> Bundle:
    main = b.thread(
        40,
        b.frame(
            f"{b.STDLIB}/threading.py",
            1139,
            "Thread._wait_for_tstate_lock",
            local_vars={"self": ("<SWAWriter>", 900 if same_thread else 901)},
        ),
        b.frame(
            f"{b.STDLIB}/threading.py",
            1119,
            "Thread.join",
            local_vars={"self": ("<SWAWriter>", 900 if same_thread else 901)},
        ),
        b.frame("swa.py", 43, "SWAWriter.stop", code="self.join()"),
        b.frame("train.py", 73, "main", code="writer.stop()"),
        name="MainThread",
        syscall="futex",
    )
    return b.bundle(b.process(40, main, _worker_waits(41, 900)))


def _exit_waits_for_thread() -> Bundle:
    main = b.thread(
        50,
        b.frame(f"{b.STDLIB}/threading.py", 1590, "_shutdown"),
        name="MainThread",
        syscall="futex",
    )
    return b.bundle(b.process(50, main, _worker_waits(51, 910)))


def _get_with_a_producer() -> Bundle:
    job = _lone_get()
    process = job.snapshots[0].processes[0]
    producer = b.thread(
        12, b.frame("train.py", 50, "produce", code="item = make()"), name="producer", state="R"
    )
    grown = process.model_copy(update={"threads": (*process.threads, producer)})
    return b.bundle(grown)


def _event_with_timeout() -> Bundle:
    main = b.thread(
        20,
        b.frame(
            f"{b.STDLIB}/threading.py", 629, "Event.wait", local_vars={"timeout": ("5.0", None)}
        ),
        b.frame("train.py", 8, "main", code="ready.wait(5.0)"),
        name="MainThread",
        syscall="futex",
    )
    return b.bundle(b.process(20, main))


def _pool_map() -> Bundle:
    main = b.thread(
        30,
        b.frame(
            f"{b.STDLIB}/threading.py",
            327,
            "Condition.wait",
            local_vars={"timeout": ("None", None)},
        ),
        b.frame(
            f"{b.STDLIB}/threading.py", 629, "Event.wait", local_vars={"timeout": ("None", None)}
        ),
        b.frame(f"{b.STDLIB}/multiprocessing/pool.py", 765, "ApplyResult.wait"),
        b.frame(f"{b.STDLIB}/multiprocessing/pool.py", 367, "Pool.map"),
        b.frame("prep.py", 45, "main", code="ids = pool.map(tokenize, corpus)"),
        name="MainThread",
        syscall="futex",
    )
    return b.bundle(b.process(30, main))


class NobodyCanWake(Rule):
    id = "HD105"
    category = Category.PROCESS_DEADLOCK
    summary = "a thread waits on a queue, event or condition that nothing can ever fill or set"
    fires_when = (
        "a thread waits without a timeout in `Queue.get()`, `Event.wait()`, `Condition.wait()`, "
        "`Semaphore.acquire()` or `Barrier.wait()`, and no other thread of its process runs "
        "any of your code that could put, set, notify or release"
    )
    why = (
        "`Queue.get()`, `Event.wait()`, `Condition.wait()`, `Semaphore.acquire()` and "
        "`Barrier.wait()` without a timeout return only when another thread of the same process "
        "puts, sets, notifies or releases. When no such thread exists (the producer never started, "
        "or died, or is the one waiting), the wait can never end and the job hangs silently."
    )
    instead = (
        "Start the producer thread before waiting (and keep it alive), or fill the queue before "
        "reading it; give the wait a timeout that raises (`q.get(timeout=60)` raising "
        "`queue.Empty`) so that a missing producer is an error, not a hang."
    )
    reads = "capture"
    specificity = 80
    fires_on = (
        Example("queue.get() with no other thread", _lone_get),
        Example(
            "a thread waits for an event its joiner would set after the join", _join_before_set
        ),
        Example(
            "the interpreter's exit waits for a thread waiting on its queue", _exit_waits_for_thread
        ),
    )
    quiet_on = (
        Example("queue.get() while a producer thread runs", _get_with_a_producer),
        Example(
            "the main thread joins another thread than the waiting one",
            lambda: _join_before_set(same_thread=False),
        ),
        Example("Pool.map waiting on the pool's own event", _pool_map),
        Example("Event.wait(5.0) with a timeout", _event_with_timeout),
    )

    def check(self, job: JobView) -> Iterable[Finding]:
        deaths = thread_deaths(job)
        for found in self._findings(job):
            death = (
                died_in(deaths, found.culprit.pid)
                if found.culprit and found.culprit.pid is not None
                else None
            )
            if death is None:
                yield found
                continue
            raised = death.raised
            where = at(raised.location) if raised.location else "its own code"
            yield found.model_copy(
                update={
                    "explanation": (
                        f"{found.explanation} The thread that would have done it, "
                        f"{raised.thread or 'a thread'}, died of {raised.short_type} "
                        f"at {where}: its traceback is in the output."
                    ),
                    "evidence": (
                        *found.evidence,
                        f"{raised.thread or 'a thread'} died of {raised.short_type}: "
                        f"{raised.message} at {where} ({death.source})",
                    ),
                    "fixes": (
                        f"Fix the error at {where}, and make the thread's work safe: catch "
                        "and report exceptions in its loop so it keeps serving (or signals "
                        "the failure to its waiters) instead of dying silently.",
                        *found.fixes,
                    ),
                }
            )

    def _findings(self, job: JobView) -> Iterable[Finding]:
        for wait in lone_waits(job):
            process, thread, primitive = wait.process, wait.thread, wait.primitive
            frame = blame_frame(frames_of(thread))
            if frame is None:
                continue
            where = short_location(frame)
            if wait.joiners:
                yield self._joined(job, wait, frame)
                continue
            yield Finding(
                id=self.id,
                category=self.category,
                severity=Severity.ERROR,
                confidence=0.85,
                title=f"Waits forever: {primitive.what} at {where}, and no other thread "
                f"could {primitive.waker}",
                explanation=(
                    f"{primitive.what} without a timeout returns only when another thread "
                    f"of the same process does its part ({primitive.waker}). "
                    f"{job.describe_process(process.pid)} has no other thread running your "
                    "code, so nothing ever will."
                ),
                culprit=culprit(job, process, thread, frame),
                evidence=(
                    f"{thread.comm or 'thread'} (tid {thread.tid}) waits in "
                    f"{primitive.what} at {at(frame)} ({kernel_words(thread)}), with "
                    "no timeout",
                    f"no other thread of {job.describe_process(process.pid)} runs user code",
                ),
                fixes=(
                    f"Make sure something will {primitive.waker} before {where} waits: "
                    "start the producer thread (and keep it alive), or fill the queue "
                    "before reading it.",
                    f"Give the wait at {where} a timeout and handle it (e.g. "
                    "`queue.get(timeout=60)` raising queue.Empty) so that a missing "
                    "producer is an error, not a hang.",
                ),
            )

    def _joined(self, job: JobView, wait: LoneWait, frame: Frame) -> Finding:
        """The thread's only possible waker waits for it to end: a join, or the exit."""
        process, thread, primitive = wait.process, wait.thread, wait.primitive
        where = short_location(frame)
        name = thread_label(thread)
        exiting = next((t for t in wait.joiners if at_exit(t)), None)
        joiner = exiting or wait.joiners[0]
        joins_at = blame_frame(frames_of(joiner))
        if exiting is not None:
            title = (
                f"The script's code has finished, but the process never exits: the "
                f"interpreter waits at exit for the non-daemon thread {name}, which "
                f"waits in {primitive.what} at {where}"
            )
            explanation = (
                "At exit Python joins every non-daemon thread. This one waits without a "
                f"timeout for another thread to {primitive.waker}, and the code that would "
                "have (a `close()`, `stop()` or an end marker) never ran."
            )
            fixes = (
                f"Before the script ends (in a `finally:`), do what ends {name}'s wait: "
                f"{primitive.waker} (its stop marker), e.g. call its `close()`/`stop()`.",
                "Or make it a daemon thread (`daemon=True`) if its last work may be "
                "dropped, or wait with a timeout and check a stop flag.",
            )
        else:
            joined_at = short_location(joins_at) if joins_at else "its join"
            title = (
                f"Deadlock: {name} waits in {primitive.what} at {where}, and the only "
                f"thread that could {primitive.waker}, {thread_label(joiner)}, waits in "
                f"join() for it at {joined_at}"
            )
            explanation = (
                f"{thread_label(joiner)} waits for {name} to end before it goes on, and {name} "
                f"waits for {thread_label(joiner)} to {primitive.waker}: each waits for the "
                "other."
            )
            fixes = (
                f"At {joined_at}, {primitive.waker} first, then join.",
                "Or join with a timeout (`thread.join(timeout=...)`, then check "
                "`is_alive()`), so that a thread that cannot finish is an error.",
            )
        return Finding(
            id=self.id,
            category=self.category,
            severity=Severity.ERROR,
            confidence=0.85,
            title=title,
            explanation=explanation,
            culprit=culprit(job, process, thread, frame),
            related=tuple(culprit(job, process, t) for t in wait.joiners[:3]),
            evidence=(
                f"{name} waits in {primitive.what} at {at(frame)} "
                f"({kernel_words(thread)}), with no timeout",
                *(
                    f"{thread_label(t)} "
                    + (
                        "is the interpreter's exit, joining non-daemon threads"
                        if at_exit(t)
                        else f"waits in join() for {name} at {at(blame_frame(frames_of(t)))}"
                    )
                    for t in wait.joiners[:3]
                ),
            ),
            fixes=fixes,
        )
