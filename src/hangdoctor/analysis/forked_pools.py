"""A child forked from a process that runs a native thread pool, stuck in the pool's next
parallel region: fork() copies only the thread that called it, so the child inherits the pool's
state (OpenMP's, MKL's, TensorFlow's and XLA's runtimes) without its worker threads, and its
first parallel operation waits for them forever, asleep on a futex inside the native call.

Read from the capture alone: the child was forked (multiprocessing's fork start method, a
DataLoader worker, or the parent's very command line), its parent has threads with no Python
stack (a native pool), and the child's main thread sleeps on a futex under a frame of the
user's or a package's code, not in one of Python's own locks, unmoving, with no other thread of
its own that runs Python beyond the standard library's machinery (a Queue's feeder)."""

from __future__ import annotations

from dataclasses import dataclass

from hangdoctor.analysis.frames import (
    Origin,
    innermost_user_frame,
    origin,
    python_frames,
    runs_python_of_its_own,
)
from hangdoctor.analysis.job import JobView
from hangdoctor.analysis.locks import lock_wait
from hangdoctor.analysis.machinery import coordinates_only
from hangdoctor.analysis.thread_waits import blocking_call
from hangdoctor.analysis.waits import WaitKind, describe_wait
from hangdoctor.evidence.model import Frame, ProcessEvidence, ThreadEvidence

_FORKED_IN = ("multiprocessing/popen_fork.py", "torch/utils/data/_utils/worker.py")


@dataclass(frozen=True)
class ForkedPoolWait:
    """A forked child asleep in a native call for a pool fork did not copy."""

    process: ProcessEvidence
    thread: ThreadEvidence
    parent: ProcessEvidence
    pool: int  # the parent's threads with no Python stack
    frame: Frame  # where the child's Python stops: the user's line, else the innermost


def _frames(thread: ThreadEvidence) -> list[Frame]:
    return python_frames(thread.python.frames if thread.python else ())


def forked_from(job: JobView, process: ProcessEvidence) -> ProcessEvidence | None:
    """The captured parent this process was forked from (not exec'd): multiprocessing's fork
    start method or a DataLoader worker on its stack, or the parent's very command line."""
    parent = job.process(process.ppid)
    if parent is None or not parent.is_python:
        return None
    paths = [f.file.replace("\\", "/") for t in process.threads[:1] for f in _frames(t)]
    if any(path.endswith(_FORKED_IN) for path in paths) or process.cmdline == parent.cmdline:
        return parent
    return None


def native_pool_threads(process: ProcessEvidence) -> list[ThreadEvidence]:
    """Threads with no Python stack of their own: a native library's pool."""
    return [
        t
        for t in process.threads
        if t.tid != process.pid and not runs_python_of_its_own(t) and not _frames(t)
    ]


def _in_native_call(thread: ThreadEvidence) -> bool:
    """Asleep on a futex while its innermost Python frame is the user's or a package's own
    line: the futex is inside the native call that line made, not one of Python's locks,
    conditions or queues (those have standard-library frames inside)."""
    frames = _frames(thread)
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


def _alone(process: ProcessEvidence, thread: ThreadEvidence) -> bool:
    """No other thread of its process runs Python of its own but the standard library's
    machinery (a multiprocessing Queue's feeder): nothing of the user's could hold the futex."""
    return not any(
        t.tid != thread.tid and runs_python_of_its_own(t) and not coordinates_only(_frames(t))
        for t in process.threads
    )


def forked_pool_wait(job: JobView, process: ProcessEvidence) -> ForkedPoolWait | None:
    """The process's main thread waiting for a native pool that fork did not copy, if it is."""
    parent = forked_from(job, process)
    thread = next((t for t in process.threads if t.tid == process.pid), None)
    if parent is None or thread is None:
        return None
    pool = native_pool_threads(parent)
    if not pool or describe_wait(job, process, thread).kind is not WaitKind.FUTEX:
        return None
    if (
        not _alone(process, thread)
        or not _in_native_call(thread)
        or not _still(job, process, thread)
    ):
        return None
    frames = _frames(thread)
    return ForkedPoolWait(
        process=process,
        thread=thread,
        parent=parent,
        pool=len(pool),
        frame=innermost_user_frame(frames) or frames[0],
    )
