"""HD109 process.deadlock: child processes wait for room in a full multiprocessing queue that
their parent reads only later, and the parent waits for those children.

A bounded `multiprocessing.Queue(maxsize=N)` blocks `put()` once N items wait in it. Pool tasks
(or worker processes) that report on a side queue while the parent sits in `Pool.map()` (or in
`join()`) fill it and stop, each task waits for room, and the parent waits for the tasks: a
cycle between processes (https://sopython.com/canon/82/). The mechanism: processes whose thread
waits in a multiprocessing queue's `put()` from the user's code without a timeout, whose parent's
main thread waits for its children (a pool's result, a join)."""

from __future__ import annotations

from collections.abc import Iterable

from hangdoctor.analysis.frames import blame_frame, in_function, python_frames, short_location
from hangdoctor.analysis.job import JobView, thread_label
from hangdoctor.analysis.thread_waits import QueueRead, multiprocessing_put
from hangdoctor.evidence.model import ProcessEvidence, ThreadEvidence
from hangdoctor.i18n import _
from hangdoctor.rules.base import Rule
from hangdoctor.rules.confidence import Confidence
from hangdoctor.rules.finding import Finding
from hangdoctor.rules.helpers import at, culprit, frames_of, kernel_words, main_thread
from hangdoctor.taxonomy import Category

# What a parent waits in while its children work: a pool's results, a child's end.
_WAITS_FOR_CHILDREN = (
    ("multiprocessing/pool.py", {"map", "starmap", "get", "wait", "next", "join"}),
    ("multiprocessing/process.py", {"join"}),
    ("multiprocessing/popen_fork.py", {"wait", "poll"}),
    ("concurrent/futures/_base.py", {"result", "wait", "as_completed"}),
)


def _waits_for_children(thread: ThreadEvidence | None) -> bool:
    frames = python_frames(thread.python.frames if thread and thread.python else ())
    return any(in_function(frames, path, functions) for path, functions in _WAITS_FOR_CHILDREN)


class FullQueueDeadlock(Rule):
    """child processes wait for room in a full queue that their waiting parent reads

    Fires when: processes wait in a multiprocessing queue's `put()` (no timeout) from your code, and
    their parent's main thread waits for its children (`Pool.map`, a result, `join()`); names the
    put and the parent's wait

    Why: `put()` on a bounded `multiprocessing.Queue(maxsize=N)` blocks while N items wait. When
    child processes or pool tasks report on such a queue and their parent, the only reader, waits
    for them first (`Pool.map()`, `join()`), the children wait for room and the parent waits for the
    children: a cycle between processes that never ends.

    Instead: Read the queue while the children run (start them with `map_async` or `imap` and drain
    the queue until the result is ready); or return the reports as part of the tasks' results, use
    an unbounded `multiprocessing.Queue()`, or `put(item, timeout=...)` and handle `queue.Full`.
    """

    id = "HD109"
    category = Category.PROCESS_DEADLOCK
    reads = "capture"
    specificity = 90

    def check(self, job: JobView) -> Iterable[Finding]:
        blocked: dict[int, list[tuple[ProcessEvidence, ThreadEvidence, QueueRead]]] = {}
        for process in job.processes:
            for thread in process.threads:
                put = multiprocessing_put(thread)
                if put is not None and process.ppid is not None:
                    blocked.setdefault(process.ppid, []).append((process, thread, put))
        for parent_pid, children in blocked.items():
            parent = job.process(parent_pid)
            waiting = main_thread(parent) if parent is not None else None
            if parent is None or waiting is None or not _waits_for_children(waiting):
                continue
            process, thread, put = children[0]
            parent_at = blame_frame(frames_of(waiting))
            put_at = short_location(put.caller)
            waits_at = short_location(parent_at) if parent_at else _("its wait")
            queue = put.what.rsplit(".", 1)[0]
            parent_name = job.describe_process(parent_pid)
            yield self.finding(
                confidence=Confidence.STRONG,
                title=_(
                    "Deadlock: {count} child processes wait for room in a full {queue} at "
                    "{put_at}, and {parent}, which reads it only later, waits for them at "
                    "{waits_at}",
                    count=len(children),
                    queue=queue,
                    put_at=put_at,
                    parent=parent_name,
                    waits_at=waits_at,
                )
                if len(children) > 1
                else _(
                    "Deadlock: {process} waits for room in a full {queue} at "
                    "{put_at}, and {parent}, which reads it only later, waits for them at "
                    "{waits_at}",
                    process=job.describe_process(process.pid),
                    queue=queue,
                    put_at=put_at,
                    parent=parent_name,
                    waits_at=waits_at,
                ),
                explanation=_(
                    "{what} blocks while the queue holds its maxsize items. The "
                    "processes filling it wait for someone to take items out, and the parent, "
                    "the only reader, does not read while it waits for those same processes "
                    "to finish: each side waits for the other.",
                    what=put.what,
                ),
                culprit=culprit(job, process, thread, put.caller),
                related=(
                    culprit(job, parent, waiting, parent_at),
                    *(culprit(job, p, t, put.caller) for p, t, _read in children[1:3]),
                ),
                evidence=(
                    *(
                        _(
                            "{process}: {thread} waits in {what} at {place} ({kernel}), no timeout",
                            process=job.describe_process(p.pid),
                            thread=thread_label(t),
                            what=put.what,
                            place=at(put.caller),
                            kernel=kernel_words(t),
                        )
                        for p, t, _read in children[:4]
                    ),
                    _(
                        "{parent} waits for its children at {place} ({kernel})",
                        parent=parent_name,
                        place=at(parent_at),
                        kernel=kernel_words(waiting),
                    ),
                ),
                fixes=(
                    _(
                        "Read the queue while the children run: start them with `map_async` "
                        "(or `imap`) and drain the queue in a loop until the result is ready, "
                        "instead of waiting at {waits_at} first.",
                        waits_at=waits_at,
                    ),
                    _(
                        "Or return what the tasks put on the side queue as part of their "
                        "results, or make the queue unbounded (`multiprocessing.Queue()`)."
                    ),
                    _(
                        "Or `put(item, timeout=...)` at {put_at} and handle `queue.Full`.",
                        put_at=put_at,
                    ),
                ),
            )
