"""HD106 process.deadlock: a forked child waits for a lock that no thread of the child holds
or could release: the lock was held by another thread of the parent when the parent forked
(multiprocessing's default on Linux), and the child got its copy in the held state."""

from __future__ import annotations

from collections.abc import Iterable

from hangdoctor.analysis.frames import (
    alone,
    blame_frame,
    runs_python_of_its_own,
    short_location,
)
from hangdoctor.analysis.job import JobView
from hangdoctor.analysis.locks import lock_holds, lock_identity, lock_wait
from hangdoctor.evidence.model import ProcessEvidence, ThreadEvidence
from hangdoctor.i18n import _
from hangdoctor.rules.base import Deferral, Rule
from hangdoctor.rules.confidence import Confidence
from hangdoctor.rules.finding import Finding
from hangdoctor.rules.helpers import at, culprit, frames_of, kernel_words
from hangdoctor.taxonomy import Category


def _held_by_itself(thread: ThreadEvidence, wanted: tuple[str, ...]) -> bool:
    return any(hold.lock == wanted for hold in lock_holds(thread))


def _users_in_parent(parent: ProcessEvidence, owner: str | None) -> list[ThreadEvidence]:
    """Threads of the parent, other than its main one, that run code on the same object (an
    address survives a fork): the ones that may have held the lock when it forked."""
    found = []
    for thread in parent.threads:
        if thread.tid == parent.pid:
            continue
        addresses = {v.addr for f in frames_of(thread) for v in f.locals if v.addr is not None}
        if owner is not None and owner in {str(a) for a in addresses}:
            found.append(thread)
    return found


class InheritedLock(Rule):
    """a forked child waits for a lock that was held when its parent forked

    Fires when: a child process, alone in its own code, waits for a lock that nothing in it holds,
    while its parent runs other threads (one of which held the lock at fork time): names the
    parent's threads that use the same object

    Why: fork() copies the memory of the parent, including every lock, but only the thread that
    called it. A lock another thread of the parent held at that moment is held in the child too, by
    a thread that does not exist there, so the child's first attempt to take it (logging, a
    tokenizer, an allocator) waits forever. multiprocessing forks by default on Linux, so DataLoader
    workers and pools are exposed whenever the parent runs threads.

    Instead: Start workers with the `spawn` or `forkserver` start method
    (`multiprocessing.get_context("spawn").Pool(...)`, `DataLoader(...,
    multiprocessing_context="spawn")`); or create the processes before starting background threads,
    or re-create the lock in the child with `os.register_at_fork(after_in_child=...)`.
    """

    id = "HD106"
    category = Category.PROCESS_DEADLOCK
    reads = "capture"
    specificity = 85
    defers_to = (
        Deferral(
            frozenset({"HD201"}),
            why=(
                "a DataLoader worker blocked on a lock copied through fork stalls the training "
                "loop's data: HD201 names the same worker with the batch it was fetching and the "
                "loop that waits for it"
            ),
            same_process=True,
        ),
    )

    def check(self, job: JobView) -> Iterable[Finding]:
        for process in job.processes:
            parent = job.process(process.ppid)
            if parent is None or not parent.stacks_sampled:
                continue
            parent_threads = [
                t for t in parent.threads if t.tid != parent.pid and runs_python_of_its_own(t)
            ]
            if not parent_threads:
                continue  # forked from a single-threaded parent: nobody else could hold it
            for thread in process.threads:
                wait = lock_wait(thread)
                if wait is None or not alone(process, thread) or _held_by_itself(thread, wait.lock):
                    continue
                frame = wait.frame
                identity, _where = lock_identity(wait.expression, frame)
                owner = identity[1] if identity[0] in ("object", "attribute") else None
                suspects = _users_in_parent(parent, owner) or parent_threads
                names = ", ".join(
                    _(
                        "{thread} (tid {tid}) at {place}",
                        thread=t.comm or _("thread"),
                        tid=t.tid,
                        place=at(blame_frame(frames_of(t))),
                    )
                    for t in suspects[:3]
                )
                yield self.finding(
                    confidence=Confidence.PROBABLE,
                    title=_(
                        "Lock inherited held through fork: {process} waits for `{lock}` at {where}",
                        process=job.describe_process(process.pid),
                        lock=wait.expression,
                        where=short_location(frame),
                    ),
                    explanation=_(
                        "No thread of {process} holds "
                        "`{lock}`, and no other thread of it could release it. It "
                        "was forked from {parent}, which runs other "
                        "threads: one of them held the lock at the moment of the fork, and the "
                        "child got the lock in that state, with no thread to release it.",
                        process=job.describe_process(process.pid),
                        lock=wait.expression,
                        parent=job.describe_process(parent.pid),
                    ),
                    culprit=culprit(job, process, thread, frame),
                    related=tuple(culprit(job, parent, t) for t in suspects[:3]),
                    evidence=(
                        _(
                            "{thread} (tid {tid}) waits for `{lock}` at {place} ({kernel})",
                            thread=thread.comm or _("thread"),
                            tid=thread.tid,
                            lock=wait.expression,
                            place=at(frame),
                            kernel=kernel_words(thread),
                        ),
                        _(
                            "the parent's other threads, which may have held it: {names}",
                            names=names,
                        ),
                    ),
                    fixes=(
                        _(
                            "Start the pool or the workers with the 'spawn' or 'forkserver' "
                            "method (`multiprocessing.get_context('spawn').Pool(...)`, "
                            "DataLoader(multiprocessing_context='spawn')): children then start "
                            "with fresh locks."
                        ),
                        _(
                            "Or create the processes before starting background threads, or "
                            "re-create the lock in the child "
                            "(`os.register_at_fork(after_in_child=...)`)."
                        ),
                    ),
                )
