"""HD108 process.deadlock: every thread of a `concurrent.futures.ThreadPoolExecutor` runs a task
that waits for a future, and no thread of the pool is left to run the tasks those futures stand
for: a task that submits to its own bounded pool and waits (nested submit) starves it.

The mechanism in the evidence: threads in the pool's `_worker` loop (one pool: the same
`work_queue` object), each inside a task (`_WorkItem.run`) and blocked in `Future.result()`
(or `concurrent.futures.wait`/`as_completed`); none of them idle or running."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from hangdoctor.analysis.frames import innermost_user_frame, python_frames, short_location
from hangdoctor.analysis.job import JobView
from hangdoctor.analysis.thread_waits import waits_on_futex
from hangdoctor.evidence.model import Frame, ThreadEvidence
from hangdoctor.i18n import _, _n
from hangdoctor.rules.base import Rule
from hangdoctor.rules.confidence import Confidence
from hangdoctor.rules.finding import Finding
from hangdoctor.rules.helpers import at, culprit, frames_of
from hangdoctor.taxonomy import Category

_THREAD_POOL = "concurrent/futures/thread.py"
_FUTURES = "concurrent/futures/_base.py"
_WAITS = frozenset({"result", "exception", "wait", "as_completed"})


def _ends(frame: Frame, path: str) -> bool:
    return frame.file.replace("\\", "/").endswith(path)


def _pool_of(thread: ThreadEvidence) -> str | None:
    """The pool a worker thread serves: its `_worker` frame's `work_queue` object."""
    for frame in python_frames(frames_of(thread)):
        if _ends(frame, _THREAD_POOL) and frame.function == "_worker":
            queue = next((v for v in frame.locals if v.name == "work_queue"), None)
            if queue is not None:
                return str(queue.addr) if queue.addr is not None else queue.repr
            return "?"  # a pool worker, its queue unknown (no locals)
    return None


def _waits_on_a_future_in_a_task(thread: ThreadEvidence) -> bool:
    """Inside a task of the pool (`_WorkItem.run` below), blocked waiting for a future."""
    frames = python_frames(frames_of(thread))
    waiting = next(
        (
            i
            for i, f in enumerate(frames)
            if _ends(f, _FUTURES) and f.function.split(".")[-1] in _WAITS
        ),
        None,
    )
    task = next(
        (
            i
            for i, f in enumerate(frames)
            if _ends(f, _THREAD_POOL) and f.function.endswith("_WorkItem.run")
        ),
        None,
    )
    return waiting is not None and task is not None and waiting < task and waits_on_futex(thread)


def _all_threads(count: int) -> str:
    return _n("its only thread waits", "all {count} of its threads wait", count)


class PoolStarved(Rule):
    """every thread of a thread pool waits for work queued in that same pool

    Fires when: every worker thread of a `ThreadPoolExecutor` runs a task that waits in
    `Future.result()` (or `wait`/`as_completed`), none is idle or running: the tasks they wait for
    are queued behind them with no thread to run them

    Why: A task that submits sub-tasks to its own bounded `ThreadPoolExecutor` and waits for them
    takes a pool thread while it waits. Once every thread waits like that, the sub-tasks sit in the
    pool's queue behind them with no thread left to run them, and the pool starves forever.

    Instead: Submit the sub-tasks from the caller and wait there, or give them a pool of their own;
    or return the sub-futures (or chain them with `add_done_callback`) instead of blocking a pool
    thread, and pass a timeout to `future.result(timeout=...)`.
    """

    id = "HD108"
    category = Category.PROCESS_DEADLOCK
    reads = "capture"
    specificity = 85

    def check(self, job: JobView) -> Iterable[Finding]:
        for process in job.processes:
            pools: dict[str, list[ThreadEvidence]] = defaultdict(list)
            for thread in process.threads:
                pool = _pool_of(thread)
                if pool is not None:
                    pools[pool].append(thread)
            for workers in pools.values():
                if not all(_waits_on_a_future_in_a_task(t) for t in workers):
                    continue
                first = workers[0]
                line = innermost_user_frame(frames_of(first))
                where = short_location(line) if line is not None else _("its task")
                yield self.finding(
                    confidence=Confidence.PROBABLE,
                    title=_(
                        "Thread pool starved: {threads} for futures at {where}, and none is "
                        "left to run the work they wait for",
                        threads=_all_threads(len(workers)),
                        where=where,
                    ),
                    explanation=_(
                        "Each thread of the pool runs a task that waits for another future. "
                        "When those futures stand for tasks submitted to the same pool (a task "
                        "that submits sub-tasks and waits for them), the sub-tasks sit in the "
                        "pool's queue behind the waiting tasks, and with every thread taken "
                        "nothing ever runs them."
                    ),
                    culprit=culprit(job, process, first, line),
                    related=tuple(
                        culprit(job, process, t, innermost_user_frame(frames_of(t)))
                        for t in workers[1:4]
                    ),
                    evidence=(
                        _(
                            "{count} thread(s) of one ThreadPoolExecutor (the same "
                            "work queue), each inside a task and blocked in Future.result(), "
                            "the first at {place}",
                            count=len(workers),
                            place=at(line),
                        ),
                        _("no thread of that pool is idle or running"),
                    ),
                    fixes=(
                        _(
                            "Do not wait at {where} for work submitted to the same bounded "
                            "pool: submit the sub-tasks from the caller and wait there, or give "
                            "them a pool of their own.",
                            where=where,
                        ),
                        _(
                            "Or let the outer tasks return their sub-futures (or chain them with "
                            "`add_done_callback`) instead of blocking a pool thread on them."
                        ),
                        _(
                            "Pass a timeout to `result()` so that a starved pool fails instead "
                            "of hanging."
                        ),
                    ),
                )
