"""HD111 process.deadlock: every thread of a process sleeps in one of Python's in-process waits
(a queue, an event, a condition, a future, a lock, a join), or goes round a loop that waits in
one with a timeout: only another thread of the same process could wake any of them, and every
one of them is asleep. Go's runtime says it as "all goroutines are asleep - deadlock!"."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from hangdoctor.analysis.frames import (
    Origin,
    innermost_user_frame,
    loop_header,
    origin,
    python_frames,
    runs_python_of_its_own,
    short_location,
)
from hangdoctor.analysis.job import JobView, thread_label
from hangdoctor.analysis.locks import lock_wait
from hangdoctor.analysis.thread_waits import at_exit, given_timeout, joined_thread, primitive_call
from hangdoctor.analysis.waitgraph import build_wait_graph, task_await
from hangdoctor.analysis.waits import describe_wait
from hangdoctor.evidence.model import Frame, ProcessEvidence, ThreadEvidence
from hangdoctor.i18n import _
from hangdoctor.rules.base import Rule
from hangdoctor.rules.confidence import Confidence
from hangdoctor.rules.finding import Finding
from hangdoctor.rules.helpers import at, culprit, frames_of, main_thread
from hangdoctor.taxonomy import Category

_STDLIB_WAITS = ("threading.py", "queue.py", "concurrent/futures/_base.py")


@dataclass(frozen=True)
class _Parked:
    """How a thread sleeps: in words for the evidence, and what the rule decides on."""

    words: str
    forever: bool = False  # a wait no timeout ends (a lock, a primitive without a timeout)
    loops: bool = False  # waits with a timeout, again and again in a loop


def _timed_loop(thread: ThreadEvidence) -> _Parked | None:
    """A loop of the user's that waits in a primitive with a timeout, again and again: caught
    asleep or just woken (the capture may see it on a CPU between two waits)."""
    found = primitive_call(thread, with_timeout=True)
    mine = innermost_user_frame(frames_of(thread))
    if found is None or mine is None or not mine.loop_lines:
        return None
    if given_timeout(thread, found[1]) == "None":
        return None  # no timeout: it does not go round, it waits for good (see _parked)
    return _again_and_again(found[0].what)


def _again_and_again(what: str) -> _Parked:
    return _Parked(
        _("waits in {what} with a timeout, again and again in a loop", what=what), loops=True
    )


def _parked(job: JobView, process: ProcessEvidence, thread: ThreadEvidence) -> _Parked | None:
    """How the thread sleeps in an in-process wait, or None when it could be doing something
    (running, sleeping on a timer, reading a pipe or a socket, waiting for a child)."""
    kernel = thread.kernel
    looping = _timed_loop(thread)
    if looping is not None and (job.thread_cpu_share(process.pid, thread.tid) or 0.0) < 0.2:
        return looping
    awaiting = task_await(job, process, thread)
    if awaiting is not None and kernel is not None and kernel.state == "S":
        return _Parked(_("runs an asyncio loop: {awaiting}", awaiting=awaiting), forever=True)
    if kernel is None or kernel.state != "S" or kernel.syscall_name not in ("futex", None):
        return None
    if joined_thread(thread) is not None:
        return _Parked(_("joins another thread"))
    if at_exit(thread):
        return _Parked(_("is the interpreter's exit, joining the non-daemon threads"))
    locked = lock_wait(thread)
    if locked is not None:
        return _Parked(
            _("waits to acquire {lock}", lock=locked.expression),
            forever=True,
        )
    found = primitive_call(thread, with_timeout=True)
    if found is not None:
        primitive, frame = found
        if given_timeout(thread, frame) == "None":
            return _Parked(
                _("waits in {what} without a timeout", what=primitive.what), forever=True
            )
        mine = innermost_user_frame(frames_of(thread))
        if mine is not None and mine.loop_lines:
            return _again_and_again(primitive.what)
        return None  # one wait with a timeout ends by itself
    frames = python_frames(frames_of(thread))
    if (
        frames
        and not any(origin(f) is Origin.USER for f in frames)
        and frames[0].file.replace("\\", "/").endswith(_STDLIB_WAITS)
    ):
        return _Parked(_("is a library's idle worker, waiting for work"))
    return None


def _holder_behind(
    job: JobView, process: ProcessEvidence, first: ThreadEvidence, users: list[ThreadEvidence]
) -> tuple[ThreadEvidence, list[str]]:
    """The thread that `first` waits for with certainty (it holds the lock `first` wants), and
    the one that thread waits for, and so on: the waits the others' hang on, where it stands;
    with a line for each such link."""
    by_tid = {t.tid: t for t in users}
    chain = build_wait_graph(job).follow((process.pid, first.tid))
    lines: list[str] = []
    visited = {first.tid}
    for edge in chain.edges:
        holder = by_tid.get(edge.waited[1]) if edge.waited[0] == process.pid else None
        if not edge.certain or holder is None or holder.tid in visited:
            break
        visited.add(holder.tid)
        lines.append(
            _(
                "{waiter} waits for {holder}, which {why}",
                waiter=thread_label(first),
                holder=thread_label(holder),
                why=edge.why,
            )
        )
        first = holder
    return first, lines


def _exception_in_flight(thread: ThreadEvidence) -> str | None:
    """A `with` block left because of an exception: its `__exit__` holds the exception (a
    ThreadPoolExecutor's exit waits for its tasks while the error waits to be raised)."""
    for frame in python_frames(frames_of(thread)):
        if frame.function.split(".")[-1] != "__exit__":
            continue
        value = next(
            (v.repr for v in frame.locals if v.name in ("exc_val", "exc_value", "value")), None
        )
        kind = next((v.repr for v in frame.locals if v.name in ("exc_type", "typ")), None)
        if kind not in (None, "None") or value not in (None, "None"):
            return value if value not in (None, "None") else kind
    return None


class AllThreadsAsleep(Rule):
    """every thread of a process sleeps in an in-process wait: none can wake another

    Fires when: every thread of a process that runs Python waits in a queue, event, condition,
    future, lock or join (without a timeout, or with one inside a loop that waits again), at least
    one with no timeout at all, and none runs, sleeps on a timer or waits on I/O

    Why: Python's in-process waits (a queue, an event, a condition, a future, a lock, a join) end
    only when another thread of the same process acts. When every thread of the process waits in
    one, nobody is left to put, set, notify, release or return, and the threads that wait with a
    timeout just go round their loops and wait again: the process never moves on.

    Instead: Give waits a timeout that raises (`future.result(timeout=...)`, `q.get(timeout=...)`),
    end workers on a sentinel or an event that every exit path sets (in a `finally:`), and flush
    partial work on shutdown (a batcher that runs only full batches must run the last partial one
    too).
    """

    id = "HD111"
    category = Category.PROCESS_DEADLOCK
    reads = "capture"
    specificity = 60

    def check(self, job: JobView) -> Iterable[Finding]:
        for process in job.processes:
            threads = [t for t in process.threads if runs_python_of_its_own(t)]
            if len(threads) < 2:
                continue  # a lone thread: no other thread of its own that could wake it
            how = {t.tid: _parked(job, process, t) for t in threads}
            if any(v is None for v in how.values()):
                continue
            forever = [
                t
                for t in threads
                if (parked := how[t.tid]) is not None
                and (parked.forever or joined_thread(t) is not None or at_exit(t))
            ]
            if not forever or not any(innermost_user_frame(frames_of(t)) for t in threads):
                continue
            yield self._finding(job, process, threads, how)

    def _finding(
        self,
        job: JobView,
        process: ProcessEvidence,
        threads: list[ThreadEvidence],
        how: dict[int, _Parked | None],
    ) -> Finding:
        main = main_thread(process)
        users = [t for t in threads if innermost_user_frame(frames_of(t)) is not None]
        first = main if main is not None and main in users else users[0]
        first, held = _holder_behind(job, process, first, users)
        frame = innermost_user_frame(frames_of(first))
        where = short_location(frame) if frame is not None else _("its wait")
        evidence = []
        for thread in threads:
            mine = innermost_user_frame(frames_of(thread))
            parked = how[thread.tid]
            shown: Frame | None = (
                loop_header(mine) if mine is not None and parked and parked.loops else mine
            )
            words = parked.words if parked else ""
            summary = describe_wait(job, process, thread).summary
            evidence.append(
                _(
                    "{thread} {how} at {place} ({wait})",
                    thread=thread_label(thread),
                    how=words,
                    place=at(shown),
                    wait=summary,
                )
                if shown is not None
                else _(
                    "{thread} {how} ({wait})", thread=thread_label(thread), how=words, wait=summary
                )
            )
        evidence[:0] = held
        flying = next((e for t in threads if (e := _exception_in_flight(t))), None)
        if flying is not None:
            evidence.append(
                _(
                    "a `with` block is being left because of an exception ({exception}): "
                    "its exit waits for the threads above before the error can surface",
                    exception=flying,
                )
            )
        return self.finding(
            confidence=Confidence.LIKELY,
            title=_(
                "All {count} threads of {process} are asleep waiting for one another; "
                "{thread} waits at {where}",
                count=len(threads),
                process=job.describe_process(process.pid),
                thread=thread_label(first),
                where=where,
            ),
            explanation=_(
                "Each thread waits in one of Python's in-process waits (a queue, event, "
                "condition, future, lock or join) that only another thread of the same process "
                "could end, and every such thread is itself waiting: nobody is left to put, "
                "set, notify, release or return. The threads that wait with a timeout go round "
                "their loops and wait again, so the process never moves on."
            )
            + (
                _(
                    " The wait began as an exception left a `with` block: the error is raised "
                    "only after the block's exit returns."
                )
                if flying
                else ""
            ),
            culprit=culprit(job, process, first, frame),
            related=tuple(culprit(job, process, t) for t in threads if t is not first)[:4],
            evidence=tuple(evidence[:8]),
            fixes=(
                _(
                    "Follow what {thread} waits for to the thread that should provide "
                    "it, and why that thread waits instead (a batch that is never full, a stop "
                    "event set only after a join, a task that died).",
                    thread=thread_label(first),
                ),
                _(
                    "Give waits a timeout that raises (`future.result(timeout=...)`, "
                    "`q.get(timeout=...)`), and let workers end on a sentinel or an event that "
                    "every exit path sets (a `finally:`)."
                ),
                _(
                    "Flush partial work on shutdown: a batcher that runs only full batches must "
                    "run the last, partial one too."
                ),
            ),
        )
