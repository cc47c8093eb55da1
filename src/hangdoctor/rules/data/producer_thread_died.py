"""HD205 data.pipeline_stall: the thread that fed batches to the training loop died of an
exception, and the loop waits forever for its next batch.

A prefetching loader hands batches over through a `queue.Queue` (or an Event): when the
producer thread raises, threading prints its traceback and the thread ends, but nothing tells
the consumer, whose `get()` without a timeout waits for good. The mechanism: a thread waits in
such a call on behalf of an iterator a `for` loop reads, no other thread of its process runs
user code, and the output holds the traceback of a thread that died."""

from __future__ import annotations

from collections.abc import Iterable

from hangdoctor.analysis.frames import blame_frame, short_location
from hangdoctor.analysis.job import JobView
from hangdoctor.analysis.thread_waits import lone_waits, waits_in_iterator
from hangdoctor.i18n import _
from hangdoctor.rules.base import Rule
from hangdoctor.rules.confidence import Confidence
from hangdoctor.rules.finding import Culprit, Finding, Location
from hangdoctor.rules.helpers import (
    culprit,
    frames_of,
    no_other_thread_runs_user_code,
    waits_without_timeout,
)
from hangdoctor.rules.log_helpers import raised_words
from hangdoctor.rules.thread_deaths import died_in, thread_deaths
from hangdoctor.taxonomy import Category


class ProducerThreadDied(Rule):
    """the thread that produced batches died of an exception; the loop waits for it

    Fires when: a thread waits without a timeout in `Queue.get()` (or an Event, a Condition) for the
    iterator a `for` loop reads, no other thread of its process runs your code, and a thread of that
    process died of an exception (recorded whole by the instrumentation under `run`, else `Exception
    in thread ...` in the output); names the line that raised

    Why: A prefetching loader hands batches over through a `queue.Queue` or an Event. When the
    producer thread raises, threading prints its traceback and the thread ends, but nothing tells
    the consumer, whose `get()` without a timeout waits for a batch no thread is left to produce:
    the traceback scrolls by and the job hangs.

    Instead: Hand the producer's exception over: wrap its loop in `try/except BaseException as e:
    q.put(e)` (and `finally: q.put(END)`) and re-raise in the consumer; or wait with a timeout
    (`q.get(timeout=...)`) and check `thread.is_alive()` when it expires.
    """

    id = "HD205"
    category = Category.DATA_PIPELINE_STALL
    reads = "capture"
    specificity = 88

    def check(self, job: JobView) -> Iterable[Finding]:
        deaths = thread_deaths(job)
        if not deaths:
            return
        for wait in lone_waits(job):
            process, thread, primitive = wait.process, wait.thread, wait.primitive
            waiting_at = blame_frame(frames_of(thread))
            death = died_in(deaths, process.pid)
            if waiting_at is None or death is None or not waits_in_iterator(thread, wait.frame):
                continue
            died = death.raised
            raised_at = died.location
            where = short_location(raised_at) if raised_at else _("its own code")
            waits = short_location(waiting_at)
            consumer = culprit(job, process, thread, waiting_at)
            yield self.finding(
                confidence=Confidence.STRONG,
                title=_(
                    "The thread producing batches ({thread}) died of {type} at {where}; the "
                    "training loop waits for its next batch in {what} at {waits}",
                    thread=died.thread,
                    type=died.short_type,
                    where=where,
                    what=primitive.what,
                    waits=waits,
                ),
                explanation=_(
                    "Batches reach the loop through {what}, filled by another "
                    "thread. That thread raised {type} and ended; threading "
                    "printed its traceback, but nothing told the consumer, which waits "
                    "without a timeout for a batch no thread is left to produce.",
                    what=primitive.what,
                    type=died.short_type,
                ),
                culprit=Culprit(
                    pid=process.pid,
                    role=consumer.role,
                    thread=died.thread,
                    location=Location.of(raised_at),
                ),
                related=(consumer,),
                evidence=(
                    _(
                        "{source}: thread {thread} died: {raised}",
                        source=_(death.source),
                        thread=died.thread,
                        raised=raised_words(died),
                    ),
                    waits_without_timeout(thread, primitive.what, waiting_at),
                    no_other_thread_runs_user_code(job, process),
                ),
                fixes=(
                    _(
                        "Fix what raised at {where} ({exception}): skip or repair "
                        "the bad record there, or catch it and log which input it was.",
                        where=where,
                        exception=died.short_type,
                    ),
                    _(
                        "Let the producer hand its exception over: wrap its loop in "
                        "`try/except BaseException as e: queue.put(e)` (and `finally: "
                        "queue.put(END)`), and have the consumer re-raise what it gets, so "
                        "a failure ends the run instead of hanging it."
                    ),
                    _(
                        "Give the wait at {waits} a timeout and check that the producer "
                        "is alive (`thread.is_alive()`) when it expires.",
                        waits=waits,
                    ),
                ),
            )
            return
