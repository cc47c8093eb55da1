"""HD114 process.deadlock: a thread waits for a file lock (flock, fcntl) on a file that another
process of the same job has open, and that process was forked from the waiting one. An flock
belongs to the open file, which fork() shares with the child: closing the parent's descriptor
does not release it while the child keeps its copy, so the parent's next lock waits for a lock
that its own forked child holds for it, forever."""

from __future__ import annotations

from collections.abc import Iterable

from hangdoctor.analysis.frames import blame_frame, short_location
from hangdoctor.analysis.job import JobView, thread_label
from hangdoctor.analysis.waits import locked_file
from hangdoctor.evidence.model import ProcessEvidence, ThreadEvidence
from hangdoctor.i18n import _
from hangdoctor.rules.base import Rule
from hangdoctor.rules.confidence import Confidence
from hangdoctor.rules.finding import Finding
from hangdoctor.rules.helpers import at, culprit, frames_of
from hangdoctor.taxonomy import Category


def _forked_from(job: JobView, child: ProcessEvidence, parent: ProcessEvidence) -> bool:
    """Whether `child` descends from `parent` without an exec (the same command line)."""
    seen = child
    climbed = {child.pid}  # a bundle from elsewhere may hold a cycle of parents
    while seen.ppid is not None and seen.ppid != parent.pid:
        up = job.process(seen.ppid)
        if up is None or up.pid in climbed:
            return False
        climbed.add(up.pid)
        seen = up
    return seen.ppid == parent.pid and child.cmdline == parent.cmdline


class InheritedFileLock(Rule):
    """a process waits for a file lock that a child it forked holds through fork

    Fires when: a thread waits in flock()/fcntl() to lock a file that a process forked from it (same
    command line, no exec) also has open: the lock belongs to the open file the child inherited, so
    closing the parent's descriptor did not release it

    Why: An flock() lock belongs to the open file, not to the descriptor or the process, and fork()
    shares open files with the child. Closing the parent's descriptor does not release the lock
    while a forked child (a DataLoader worker, a Pool, a multiprocessing.Process) keeps its copy, so
    the parent's next lock on that file waits for its own child, forever.

    Instead: Do not fork while holding a file lock: start helpers before taking it, or unlock
    explicitly with `fcntl.flock(fd, fcntl.LOCK_UN)` first (do not rely on `close()`); open lock
    files with `O_CLOEXEC` and start helpers with the `spawn` start method so children do not
    inherit them.
    """

    id = "HD114"
    category = Category.PROCESS_DEADLOCK
    reads = "capture"
    specificity = 85

    def check(self, job: JobView) -> Iterable[Finding]:
        for process, thread in job.threads():
            path = locked_file(job, process, thread)
            if path is None:
                continue
            fd = thread.kernel.syscall_args[0] if thread.kernel else None
            # Inherited descriptors keep their numbers: the child has the file open under the
            # very descriptor the parent locks through (a child that opened the file itself,
            # and took its own lock, has it under a number of its own).
            holders = [
                p
                for p in job.processes
                if p.pid != process.pid
                and any(f.target == path and f.fd == fd for f in p.open_files)
                and _forked_from(job, p, process)
            ]
            if holders:
                yield self._finding(job, process, thread, path, holders)

    def _finding(
        self,
        job: JobView,
        process: ProcessEvidence,
        thread: ThreadEvidence,
        path: str,
        holders: list[ProcessEvidence],
    ) -> Finding:
        frame = blame_frame(frames_of(thread))
        where = short_location(frame) if frame is not None else _("its lock call")
        names = ", ".join(job.describe_process(p.pid) for p in holders[:3])
        return self.finding(
            confidence=Confidence.PROBABLE,
            title=_(
                "{thread} waits to lock {path} at {where}, and the lock is held through the "
                "copy of that file its forked child {names} inherited",
                thread=thread_label(thread),
                path=path,
                where=where,
                names=names,
            ),
            explanation=_(
                "An flock() lock belongs to the open file, not to the descriptor or the "
                "process. A child forked while the file was open (and locked) shares that "
                "open file; closing the parent's descriptor does not release the lock while "
                "the child keeps its copy. The parent's next lock on the same file then waits "
                "for a lock its own child holds, and the child has no reason to let go."
            ),
            culprit=culprit(job, process, thread, frame),
            related=tuple(culprit(job, p, next(iter(p.threads), None)) for p in holders[:3]),
            evidence=(
                _(
                    "{thread} of {process} waits in flock()/fcntl() at {place} on {path}",
                    thread=thread_label(thread),
                    process=job.describe_process(process.pid),
                    place=at(frame),
                    path=path,
                ),
                *(
                    _(
                        "{process}, forked from it (same command line), has {path} open too",
                        process=job.describe_process(p.pid),
                        path=path,
                    )
                    for p in holders[:3]
                ),
            ),
            fixes=(
                _(
                    "Do not fork (start a multiprocessing.Process, a DataLoader with workers, a "
                    "Pool) while holding the lock: start the helper before taking it, or after "
                    "releasing it explicitly with `fcntl.flock(fd, fcntl.LOCK_UN)` (unlock, do "
                    "not rely on close())."
                ),
                _(
                    "Open the lock file with O_CLOEXEC and start helpers with the spawn start "
                    "method, so children do not inherit it; or use a lock per process "
                    "(`fcntl.lockf`/`F_OFD_SETLK` semantics differ: check which your code needs)."
                ),
            ),
        )
