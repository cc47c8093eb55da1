"""HD107 process.deadlock: a parent waits for a child process to exit, and the child cannot
exit until its `multiprocessing.Queue` has handed every item it put into the pipe, which only
the parent reads: each waits for the other.

Python's documentation warns about it ("Joining processes that use queues"): a process that
put items on a Queue joins the queue's feeder thread before it ends, and the feeder blocks on
a full pipe. The mechanism in the evidence: a thread of the parent in `Process.join()` (a
wait for a child), and in that child a `QueueFeederThread` blocked writing its pipe."""

from __future__ import annotations

from collections.abc import Iterable

from hangdoctor.analysis.frames import (
    innermost_user_frame,
    python_frames,
    short_file,
    short_location,
)
from hangdoctor.analysis.job import JobView
from hangdoctor.analysis.waits import WaitKind, describe_wait
from hangdoctor.evidence.model import CodeFinding, Frame, ProcessEvidence, ThreadEvidence
from hangdoctor.i18n import _
from hangdoctor.rules.base import Rule
from hangdoctor.rules.confidence import Confidence
from hangdoctor.rules.finding import Finding, Location
from hangdoctor.rules.helpers import at, culprit, frames_of, kernel_words
from hangdoctor.taxonomy import Category

_QUEUES = "multiprocessing/queues.py"
_UNREAD = "HL403"  # hangdoctor lint: a loop that can stop reading before the end marker
_JOINS = (("multiprocessing/process.py", "join"), ("multiprocessing/popen_fork.py", "wait"))


def _in(thread: ThreadEvidence, places: tuple[tuple[str, str], ...]) -> bool:
    return any(
        f.file.replace("\\", "/").endswith(path) and f.function.split(".")[-1] == name
        for f in python_frames(frames_of(thread))
        for path, name in places
    )


def _joining(job: JobView, process: ProcessEvidence) -> ThreadEvidence | None:
    """A thread of `process` waiting in `Process.join()` for a child to exit."""
    return next(
        (
            t
            for t in process.threads
            if _in(t, _JOINS) and describe_wait(job, process, t).kind is WaitKind.CHILD
        ),
        None,
    )


def _blocked_feeder(job: JobView, child: ProcessEvidence) -> ThreadEvidence | None:
    """The child's Queue feeder thread, blocked writing a full pipe."""
    return next(
        (
            t
            for t in child.threads
            if _in(t, ((_QUEUES, "_feed"),))
            and describe_wait(job, child, t).kind is WaitKind.PIPE_WRITE
        ),
        None,
    )


class QueueJoinDeadlock(Rule):
    """a parent joins a child whose Queue still holds items nobody reads

    Fires when: a thread waits in `Process.join()` for a child, and that child's
    `multiprocessing.Queue` feeder thread is blocked writing a full pipe: the child cannot exit
    until the parent reads, and the parent reads nothing until the child exits

    Why: A process that put items on a `multiprocessing.Queue` does not end until its feeder thread
    has written them all into the queue's pipe. When the pipe is full and the parent, its only
    reader, is waiting in `join()` for that child, each waits for the other and the job hangs
    (Python's documentation warns of it under "Joining processes that use queues").

    Instead: Drain the queue (until an end marker) before calling `join()`; or stop the producer
    first, drain what it put, then join. If the items left over do not matter, call
    `queue.cancel_join_thread()` in the child.
    """

    id = "HD107"
    category = Category.PROCESS_DEADLOCK
    reads = "capture"
    specificity = 90

    def check(self, job: JobView) -> Iterable[Finding]:
        for parent in job.processes:
            joining = _joining(job, parent)
            if joining is None:
                continue
            for child in job.children(parent.pid):
                feeder = _blocked_feeder(job, child)
                if feeder is not None:
                    yield self._finding(job, parent, joining, child, feeder)
                    break

    def _finding(
        self,
        job: JobView,
        parent: ProcessEvidence,
        joining: ThreadEvidence,
        child: ProcessEvidence,
        feeder: ThreadEvidence,
    ) -> Finding:
        line = innermost_user_frame(frames_of(joining))
        where = (
            _("at {where}", where=short_location(line))
            if line is not None
            else _("as it exits (multiprocessing joins its children at exit)")
        )
        # With no join line of the user's (the join runs at exit), the line where the child was
        # started, which a forked child's stack still shows.
        child_main = next((t for t in child.threads if t.tid == child.pid), None)
        started = innermost_user_frame(frames_of(child_main)) if child_main else None
        # The code may show the loop that stopped reading (`hangdoctor lint` HL403).
        unread = next((c for c in job.bundle.code_findings if c.rule_id == _UNREAD), None)
        blamed = culprit(job, parent, joining, line or started)
        if unread is not None:
            location = Location(
                file=unread.file, line=unread.line, function=unread.function, code=unread.code
            )
            blamed = blamed.model_copy(update={"location": location})
        return self.finding(
            confidence=Confidence.CERTAIN,
            title=_(
                "Deadlock: {parent} waits for {child} to exit {where}, and the child "
                "cannot exit before its queue's items are read",
                parent=job.describe_process(parent.pid),
                child=job.describe_process(child.pid),
                where=where,
            ),
            explanation=_(
                "A process that put items on a multiprocessing.Queue waits, before it "
                "ends, until its feeder thread has written them all into the queue's "
                "pipe. The pipe is full and only the parent reads it, but the parent "
                "stopped reading and waits for the child to end: each waits for the "
                "other."
            ),
            culprit=blamed,
            related=(culprit(job, child, feeder),),
            evidence=(
                _join_words(job, parent, joining, line),
                _(
                    "{process}: its Queue feeder thread (tid {tid}) is blocked writing "
                    "the pipe ({kernel})",
                    process=job.describe_process(child.pid),
                    tid=feeder.tid,
                    kernel=kernel_words(feeder),
                ),
                *(
                    (_("the child was started at {place}", place=at(started)),)
                    if line is None and started is not None
                    else ()
                ),
                *((_unread_words(unread),) if unread is not None else ()),
            ),
            fixes=(
                _(
                    "Read everything the child puts before joining it: drain the queue "
                    "(until an end marker) and only then call `join()`."
                ),
                _(
                    "Or stop the producer first (a stop Event it checks before each "
                    "`put`), drain what it already put, then join."
                ),
                _(
                    "If the items left over do not matter, call `queue.cancel_join_thread()` "
                    "in the child (they are lost), or make the worker a daemon."
                ),
            ),
        )


def _join_words(
    job: JobView, parent: ProcessEvidence, joining: ThreadEvidence, line: Frame | None
) -> str:
    """The parent's thread waiting in join(), at its line or at exit."""
    who = {
        "process": job.describe_process(parent.pid),
        "thread": joining.comm or _("thread"),
        "tid": joining.tid,
        "kernel": kernel_words(joining),
    }
    if line is not None:
        return _(
            "{process}: {thread} (tid {tid}) waits in Process.join() ({kernel}) at {place}",
            place=at(line),
            **who,
        )
    return _(
        "{process}: {thread} (tid {tid}) waits in Process.join() ({kernel}), called at exit", **who
    )


def _unread_words(unread: CodeFinding) -> str:
    return _(
        "code ({rule}): the loop at {file}:{line} reads the queue a "
        "fixed number of times and can stop before the worker's "
        "end marker",
        rule=unread.rule_id,
        file=short_file(unread.file),
        line=unread.line,
    )
