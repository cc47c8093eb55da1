"""HD451 native.blocked: a process forked from a parent that ran a
native thread pool (OpenMP's, behind torch and numpy's parallel operations) sleeps on a futex
inside a native call. fork() copies only the thread that called it: the pool's worker threads
do not exist in the child, but the pool's state says they do, and its next parallel region
waits for them forever (GNU libgomp is not fork-safe)."""

from __future__ import annotations

from collections.abc import Iterable

from hangdoctor.analysis.frames import (
    Origin,
    innermost_user_frame,
    origin,
    python_frames,
    runs_python_of_its_own,
    short_location,
)
from hangdoctor.analysis.job import JobView, thread_label
from hangdoctor.analysis.locks import lock_wait
from hangdoctor.analysis.thread_waits import blocking_call
from hangdoctor.analysis.waits import WaitKind, describe_wait
from hangdoctor.evidence.model import ProcessEvidence, ThreadEvidence
from hangdoctor.i18n import _
from hangdoctor.rules.base import Rule
from hangdoctor.rules.confidence import Confidence
from hangdoctor.rules.finding import Finding
from hangdoctor.rules.helpers import at, culprit, frames_of, kernel_words, main_thread
from hangdoctor.taxonomy import Category

_FORKED_IN = ("multiprocessing/popen_fork.py", "torch/utils/data/_utils/worker.py")


def _forked(job: JobView, process: ProcessEvidence) -> ProcessEvidence | None:
    """The captured parent this process was forked from (not exec'd): multiprocessing's fork
    start method or a DataLoader worker on its stack, or the parent's very command line."""
    parent = job.process(process.ppid)
    if parent is None or not parent.is_python:
        return None
    frames = [f.file.replace("\\", "/") for t in process.threads[:1] for f in frames_of(t)]
    if any(path.endswith(_FORKED_IN) for path in frames) or process.cmdline == parent.cmdline:
        return parent
    return None


def _native_threads(process: ProcessEvidence) -> list[ThreadEvidence]:
    """Threads with no Python stack of their own: a native library's pool."""
    return [
        t
        for t in process.threads
        if t.tid != process.pid
        and not runs_python_of_its_own(t)
        and not (t.python and t.python.frames)
    ]


def _in_native_call(thread: ThreadEvidence) -> bool:
    """Asleep on a futex while its innermost Python frame is the user's or a package's own
    line: the futex is inside the native call that line made, not one of Python's locks,
    conditions or queues (those have standard-library frames inside)."""
    frames = python_frames(frames_of(thread))
    if not frames or lock_wait(thread) is not None or blocking_call(thread) is not None:
        return False
    return origin(frames[0]) in (Origin.USER, Origin.PACKAGE)


def _still(job: JobView, process: ProcessEvidence, thread: ThreadEvidence) -> bool:
    """It did not move between the samples: same line, no CPU used."""
    share = job.thread_cpu_share(process.pid, thread.tid)
    lines = {
        (s.python.frames[0].file, s.python.frames[0].line)
        for _, s in job.samples(process.pid, thread.tid)
        if s.python and s.python.frames
    }
    return (share is None or share < 0.02) and len(lines) <= 1


class ForkedPool(Rule):
    """a forked child waits inside a native call for a thread pool that fork did not copy

    Fires when: a process forked (not exec'd) from a parent that runs native pool threads sleeps on
    a futex inside a native call of your code (a torch or numpy operation), alone in its process and
    unmoving: OpenMP's pool in the child waits for workers that do not exist

    Why: fork() copies only the thread that calls it. A parent that already ran torch's or numpy's
    parallel operations has a native thread pool (GNU OpenMP, MKL) whose state the child inherits
    without its worker threads; the child's first parallel operation waits for workers that do not
    exist, asleep on a futex forever (libgomp is not fork-safe).

    Instead: Start children with the `spawn` or `forkserver` start method
    (`multiprocessing.set_start_method("spawn")`, `DataLoader(...,
    multiprocessing_context="spawn")`); or do no parallel torch/numpy work before forking, or run
    the children single-threaded (`torch.set_num_threads(1)` as the child starts,
    `OMP_NUM_THREADS=1`).
    """

    id = "HD451"
    category = Category.NATIVE_BLOCKED
    reads = "capture"
    specificity = 70

    def check(self, job: JobView) -> Iterable[Finding]:
        for process in job.processes:
            parent = _forked(job, process)
            thread = main_thread(process)
            if parent is None or thread is None:
                continue
            pool = _native_threads(parent)
            if not pool or describe_wait(job, process, thread).kind is not WaitKind.FUTEX:
                continue
            others = [
                t for t in process.threads if t.tid != thread.tid and runs_python_of_its_own(t)
            ]
            if others or not _in_native_call(thread) or not _still(job, process, thread):
                continue
            yield self._finding(job, parent, process, thread, len(pool))

    def _finding(
        self,
        job: JobView,
        parent: ProcessEvidence,
        process: ProcessEvidence,
        thread: ThreadEvidence,
        pool: int,
    ) -> Finding:
        frame = innermost_user_frame(frames_of(thread)) or python_frames(frames_of(thread))[0]
        where = short_location(frame)
        return self.finding(
            confidence=Confidence.FAIR,
            title=_(
                "{process} hangs inside the native call at {where}: it was forked from a "
                "process running a thread pool",
                process=job.describe_process(process.pid),
                where=where,
            ),
            explanation=_(
                "{process} was forked from {parent}, which runs {pool} native thread(s) with "
                "no Python stack: a thread pool (OpenMP's, behind PyTorch's and numpy's "
                "parallel operations, or MKL's). fork() copies only the thread that called "
                "it, so the child has none of the pool's workers while the pool's state says "
                "it has; the child's first parallel operation waits for them forever, asleep "
                "on a futex at {where}.",
                process=job.describe_process(process.pid),
                parent=job.describe_process(parent.pid),
                pool=pool,
                where=where,
            ),
            culprit=culprit(job, process, thread, frame),
            related=(culprit(job, parent, main_thread(parent)),),
            evidence=(
                _(
                    "{process}, {thread}: at {place}, asleep on a futex inside that native call "
                    "({kernel}), alone in its process, unmoving",
                    process=job.describe_process(process.pid),
                    thread=thread_label(thread),
                    place=at(frame),
                    kernel=kernel_words(thread),
                ),
                _(
                    "its parent {parent} runs {pool} native thread(s) "
                    "with no Python stack (a thread pool) and forked it",
                    parent=job.describe_process(parent.pid),
                    pool=pool,
                ),
            ),
            fixes=(
                _(
                    "Start the children with the spawn (or forkserver) start method: "
                    '`multiprocessing.set_start_method("spawn")`, '
                    '`DataLoader(..., multiprocessing_context="spawn")`; a fresh interpreter '
                    "builds its own pool."
                ),
                _(
                    "Or keep the parent from starting the pool before it forks (no parallel torch "
                    "or numpy work before the fork), or run the children's math single-threaded "
                    "(`torch.set_num_threads(1)` as the child starts, `OMP_NUM_THREADS=1`)."
                ),
                _(
                    "Run `hangdoctor dump PID --native` on the child to see the pool's frames "
                    "(gomp_team_barrier_wait, for GNU OpenMP)."
                ),
            ),
        )
