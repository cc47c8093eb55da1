"""HD105 process.deadlock: a thread waits, without a timeout, on a queue, event or condition
that only another thread of its process could fill or set, and its process has no such thread:
it waits for itself, forever."""

from __future__ import annotations

from collections.abc import Iterable

from hangdoctor.analysis.frames import blame_frame, short_location
from hangdoctor.analysis.job import JobView, thread_label
from hangdoctor.analysis.thread_waits import LoneWait, at_exit, lone_waits
from hangdoctor.evidence.model import Frame
from hangdoctor.i18n import _
from hangdoctor.rules.base import Rule
from hangdoctor.rules.confidence import Confidence
from hangdoctor.rules.finding import Finding
from hangdoctor.rules.helpers import (
    at,
    culprit,
    frames_of,
    kernel_words,
    no_other_thread_runs_user_code,
    waits_without_timeout,
)
from hangdoctor.rules.thread_deaths import died_in, thread_deaths
from hangdoctor.taxonomy import Category


class NobodyCanWake(Rule):
    """a thread waits on a queue, event or condition that nothing can ever fill or set

    Fires when: a thread waits without a timeout in `Queue.get()`, `Event.wait()`,
    `Condition.wait()`, `Semaphore.acquire()` or `Barrier.wait()`, and no other thread of its
    process runs any of your code that could put, set, notify or release

    Why: `Queue.get()`, `Event.wait()`, `Condition.wait()`, `Semaphore.acquire()` and
    `Barrier.wait()` without a timeout return only when another thread of the same process puts,
    sets, notifies or releases. When no such thread exists (the producer never started, or died, or
    is the one waiting), the wait can never end and the job hangs silently.

    Instead: Start the producer thread before waiting (and keep it alive), or fill the queue before
    reading it; give the wait a timeout that raises (`q.get(timeout=60)` raising `queue.Empty`) so
    that a missing producer is an error, not a hang.
    """

    id = "HD105"
    category = Category.PROCESS_DEADLOCK
    reads = "capture"
    specificity = 80

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
            where = at(raised.location) if raised.location else _("its own code")
            who = raised.thread or _("a thread")
            yield found.model_copy(
                update={
                    "explanation": _(
                        "{explanation} The thread that would have done it, {thread}, died of "
                        "{type} at {where}: its traceback is in the output.",
                        explanation=found.explanation,
                        thread=who,
                        type=raised.short_type,
                        where=where,
                    ),
                    "evidence": (
                        *found.evidence,
                        _(
                            "{thread} died of {type}: {message} at {where} ({source})",
                            thread=who,
                            type=raised.short_type,
                            message=raised.message,
                            where=where,
                            source=_(death.source),
                        ),
                    ),
                    "fixes": (
                        _(
                            "Fix the error at {where}, and make the thread's work safe: catch "
                            "and report exceptions in its loop so it keeps serving (or signals "
                            "the failure to its waiters) instead of dying silently.",
                            where=where,
                        ),
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
            yield self.finding(
                confidence=Confidence.STRONG,
                title=_(
                    "Waits forever: {what} at {where}, and no other thread could {waker}",
                    what=primitive.what,
                    where=where,
                    waker=primitive.waker,
                ),
                explanation=_(
                    "{what} without a timeout returns only when another thread "
                    "of the same process does its part ({waker}). "
                    "{process} has no other thread running your "
                    "code, so nothing ever will.",
                    what=primitive.what,
                    waker=primitive.waker,
                    process=job.describe_process(process.pid),
                ),
                culprit=culprit(job, process, thread, frame),
                evidence=(
                    waits_without_timeout(thread, primitive.what, frame),
                    no_other_thread_runs_user_code(job, process),
                ),
                fixes=(
                    _(
                        "Make sure something will {waker} before {where} waits: "
                        "start the producer thread (and keep it alive), or fill the queue "
                        "before reading it.",
                        waker=primitive.waker,
                        where=where,
                    ),
                    _(
                        "Give the wait at {where} a timeout and handle it (e.g. "
                        "`queue.get(timeout=60)` raising queue.Empty) so that a missing "
                        "producer is an error, not a hang.",
                        where=where,
                    ),
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
            title = _(
                "The script's code has finished, but the process never exits: the "
                "interpreter waits at exit for the non-daemon thread {name}, which "
                "waits in {what} at {where}",
                name=name,
                what=primitive.what,
                where=where,
            )
            explanation = _(
                "At exit Python joins every non-daemon thread. This one waits without a "
                "timeout for another thread to {waker}, and the code that would "
                "have (a `close()`, `stop()` or an end marker) never ran.",
                waker=primitive.waker,
            )
            fixes = (
                _(
                    "Before the script ends (in a `finally:`), do what ends {name}'s wait: "
                    "{waker} (its stop marker), e.g. call its `close()`/`stop()`.",
                    name=name,
                    waker=primitive.waker,
                ),
                _(
                    "Or make it a daemon thread (`daemon=True`) if its last work may be "
                    "dropped, or wait with a timeout and check a stop flag."
                ),
            )
        else:
            joined_at = short_location(joins_at) if joins_at else _("its join")
            title = _(
                "Deadlock: {name} waits in {what} at {where}, and the only "
                "thread that could {waker}, {joiner}, waits in "
                "join() for it at {joined_at}",
                name=name,
                what=primitive.what,
                where=where,
                waker=primitive.waker,
                joiner=thread_label(joiner),
                joined_at=joined_at,
            )
            explanation = _(
                "{joiner} waits for {name} to end before it goes on, and {name} "
                "waits for {joiner} to {waker}: each waits for the other.",
                joiner=thread_label(joiner),
                name=name,
                waker=primitive.waker,
            )
            fixes = (
                _(
                    "At {joined_at}, {waker} first, then join.",
                    joined_at=joined_at,
                    waker=primitive.waker,
                ),
                _(
                    "Or join with a timeout (`thread.join(timeout=...)`, then check "
                    "`is_alive()`), so that a thread that cannot finish is an error."
                ),
            )
        return self.finding(
            confidence=Confidence.STRONG,
            title=title,
            explanation=explanation,
            culprit=culprit(job, process, thread, frame),
            related=tuple(culprit(job, process, t) for t in wait.joiners[:3]),
            evidence=(
                _(
                    "{name} waits in {what} at {place} ({kernel}), with no timeout",
                    name=name,
                    what=primitive.what,
                    place=at(frame),
                    kernel=kernel_words(thread),
                ),
                *(
                    _(
                        "{thread} is the interpreter's exit, joining non-daemon threads",
                        thread=thread_label(t),
                    )
                    if at_exit(t)
                    else _(
                        "{thread} waits in join() for {name} at {place}",
                        thread=thread_label(t),
                        name=name,
                        place=at(blame_frame(frames_of(t))),
                    )
                    for t in wait.joiners[:3]
                ),
            ),
            fixes=fixes,
        )
