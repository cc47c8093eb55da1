"""HD110 process.deadlock: the main thread has ended (the script finished, or it died of an
exception whose traceback was printed), but the process cannot exit: the interpreter's exit
joins every non-daemon thread, and one of them runs a loop that waits with a timeout or sleeps
between checks of a condition that only the ended main thread would have changed."""

from __future__ import annotations

from collections.abc import Iterable

from hangdoctor.analysis.frames import innermost_user_frame, loop_header, short_location
from hangdoctor.analysis.job import JobView, thread_label
from hangdoctor.analysis.thread_waits import at_exit, blocking_call
from hangdoctor.analysis.tracebacks import Raised, tracebacks
from hangdoctor.analysis.waits import WaitKind, describe_wait
from hangdoctor.evidence.model import ProcessEvidence, ThreadEvidence
from hangdoctor.i18n import _
from hangdoctor.rules.base import Rule
from hangdoctor.rules.confidence import Confidence
from hangdoctor.rules.finding import Finding
from hangdoctor.rules.helpers import at, culprit, frames_of, main_thread
from hangdoctor.rules.log_helpers import output_lines
from hangdoctor.taxonomy import Category

_LOOP_WAITS = frozenset({WaitKind.SLEEP, WaitKind.FUTEX, WaitKind.POLL, WaitKind.RUNNING})


def _looping(thread: ThreadEvidence) -> bool:
    """A thread of the user's that sits in a loop and waits with a timeout (or sleeps, or
    spins): it goes round again and again, and never ends on its own."""
    frame = innermost_user_frame(frames_of(thread))
    return frame is not None and bool(frame.loop_lines) and blocking_call(thread) is None


def _main_died(job: JobView, process: ProcessEvidence) -> Raised | None:
    """The main thread's own traceback in the output, if it died of an exception."""
    return (
        next(
            (
                r
                for r in tracebacks(output_lines(job))
                if r.thread is None and r.in_user_code and r.rank is None
            ),
            None,
        )
        if job.record is not None
        else None
    )


class ExitWaitsForLoop(Rule):
    """the main thread ended, but the interpreter's exit waits for a looping thread

    Fires when: the main thread is in the interpreter's exit (`threading._shutdown`), which joins
    every non-daemon thread, and one of them runs a loop of your code that sleeps or waits with a
    timeout: its stop condition was the main thread's to set

    Why: When the main thread ends (the script finished, or died of an exception), Python joins
    every non-daemon thread before the process can exit. A thread whose loop waits for a stop flag
    or event that only the main thread would have set never ends, so the process stays alive doing
    nothing and its launcher (torchrun, a scheduler) waits for it forever. atexit handlers run only
    after that join, so they cannot stop it.

    Instead: Stop the thread on every way out of the main code: set its event in a `finally:` (or a
    context manager around the training loop); or start it with `daemon=True` when it holds nothing
    that must be flushed.
    """

    id = "HD110"
    category = Category.PROCESS_DEADLOCK
    reads = "capture"
    specificity = 85

    def check(self, job: JobView) -> Iterable[Finding]:
        for process in job.processes:
            main = main_thread(process)
            if main is None or not at_exit(main):
                continue
            loops = [
                t
                for t in process.threads
                if t.tid != main.tid
                and _looping(t)
                and describe_wait(job, process, t).kind in _LOOP_WAITS
            ]
            if loops:
                yield self._finding(job, process, main, loops[0])

    def _finding(
        self, job: JobView, process: ProcessEvidence, main: ThreadEvidence, thread: ThreadEvidence
    ) -> Finding:
        inner = innermost_user_frame(frames_of(thread))
        header = loop_header(inner)
        where = short_location(header) if header is not None else _("its loop")
        died = _main_died(job, process)
        if died is None:
            ended = _("the script's main thread finished")
        elif died.location:
            ended = _(
                "the main thread died of {type}: {message} at {place}",
                type=died.short_type,
                message=died.message,
                place=at(died.location),
            )
        else:
            ended = _(
                "the main thread died of {type}: {message}",
                type=died.short_type,
                message=died.message,
            )
        evidence = [
            _(
                "{process}: {thread} is in the interpreter's exit (threading._shutdown), "
                "joining every non-daemon thread",
                process=job.describe_process(process.pid),
                thread=thread_label(main),
            ),
            _(
                "{thread} loops at {header}; now at {place} ({wait})",
                thread=thread_label(thread),
                header=at(header),
                place=at(inner),
                wait=describe_wait(job, process, thread).summary,
            ),
            ended,
        ]
        return self.finding(
            confidence=Confidence.PROBABLE,
            title=_(
                "The script is over but the process never exits: {thread} keeps looping at {where}",
                thread=thread_label(thread),
                where=where,
            ),
            explanation=_(
                "{ended}. Python then waits for every non-daemon "
                "thread to end, and {thread} never will: its loop at {where} "
                "goes round until a condition changes that only the main thread would have "
                "changed (a stop flag, an event, a sentinel). The process stays alive doing "
                "nothing, and a launcher waits for it forever.",
                ended=ended[0].upper() + ended[1:],
                thread=thread_label(thread),
                where=where,
            ),
            culprit=culprit(job, process, thread, header),
            related=(culprit(job, process, main),),
            evidence=tuple(evidence),
            fixes=(
                _(
                    "Stop the thread on every way out of the main code: set its flag or event in "
                    "a `finally:` (or a context manager around the training loop), so that an "
                    "exception stops it too."
                ),
                _(
                    "Or start it with `daemon=True` if it holds nothing that must be flushed; "
                    "then the exit does not wait for it."
                ),
                _(
                    "An `atexit` handler cannot stop it: Python joins the non-daemon threads "
                    "before it runs atexit handlers."
                ),
            ),
        )
