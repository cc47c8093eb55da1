"""Threads that only coordinate: the standard library's concurrency machinery.

A `multiprocessing.Pool` runs three threads of its own beside the user's (one keeps the worker
processes populated, one hands out tasks, one collects results); a `multiprocessing.Queue` a
feeder; a `ProcessPoolExecutor` a manager thread. None of them ever runs the user's work: they
move it. When one of them burns a core while every thread of the user's waits (CPython's pool
keeps re-scanning a worker that died, https://github.com/python/cpython/issues/103061 and
/issues/86582), the process is busy but no training work is being done: its CPU is not
progress, and the job is hung after the idle threshold, not three times it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from hangdoctor.analysis.frames import Origin, in_function, origin, python_frames
from hangdoctor.evidence.model import Frame, PythonThread, ThreadEvidence

# (file, function names without their class): the service loops of the standard library's
# concurrency machinery, each the bottom of a thread that the library started and that never
# calls the user's code.
SERVICE_LOOPS: tuple[tuple[str, frozenset[str]], ...] = (
    (
        "multiprocessing/pool.py",
        frozenset({"_handle_workers", "_handle_tasks", "_handle_results"}),
    ),
    ("multiprocessing/queues.py", frozenset({"_feed"})),
    (
        "concurrent/futures/process.py",
        frozenset({"run", "_queue_management_worker"}),  # _ExecutorManagerThread.run
    ),
)


def coordinates_only(frames: Iterable[Frame]) -> bool:
    """Whether a thread's stack is a service loop of the machinery, with no frame of the
    user's, nor of hangdoctor's (a process still importing the instrumentation at start-up
    is starting, not spinning)."""
    stack = python_frames(tuple(frames))
    if not stack:
        return False  # native threads (OpenMP, XLA, gloo) may compute for the user
    # Code a library generated (`<string>`: a namedtuple's constructor) is the library's.
    origins = {origin(frame) for frame in stack if not frame.file.startswith("<")}
    if Origin.USER in origins or Origin.TOOL in origins:
        return False
    return any(in_function(stack, file, set(functions)) for file, functions in SERVICE_LOOPS)


def _on_a_cpu(threads: Iterable[PythonThread]) -> list[PythonThread]:
    """The threads py-spy saw on a CPU (`active`), hangdoctor's own left out: its status
    writer works for a moment at any time, and says nothing about the job."""
    return [
        thread
        for thread in threads
        if thread.active and not (thread.name or "").startswith(OUR_THREADS)
    ]


#: The name every thread the instrumentation starts in a job begins with.
OUR_THREADS = "hangdoctor-"


def polls_only(threads: Iterable[PythonThread]) -> bool:
    """Whether the threads on a CPU in one look at a busy process (py-spy's `active`) are all
    machinery: the process spins, it does not compute. False when none is on a CPU (its native
    threads compute, out of py-spy's sight)."""
    active = _on_a_cpu(threads)
    return bool(active) and all(coordinates_only(thread.frames) for thread in active)


def rests(stacks: Mapping[int, PythonThread], kernel: Iterable[ThreadEvidence]) -> bool:
    """Whether one look at a process that was busy a moment ago finds it resting now: no Python
    thread of the job's on a CPU (`stacks`, by OS thread id), and no thread without a Python
    stack (OpenMP, XLA, gloo: they compute for the user) running. A worker that handed over its
    last result before the job stopped; on its own, never a reason to call a busy job hung."""
    if _on_a_cpu(stacks.values()):
        return False
    return not any(
        thread.tid not in stacks and thread.kernel is not None and thread.kernel.state == "R"
        for thread in kernel
    )
