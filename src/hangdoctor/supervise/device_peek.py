"""One look at a busy job's stacks: is it computing, or waiting for the GPU?

A host thread waiting for the device spins on a CPU core (CUDA's default synchronisation polls),
so a job stuck behind a kernel that never ends looks busy. When such a job has gone the idle
threshold without progress, the supervisor dumps each busy process once (py-spy, time-limited):
Python frames first, which are cheap; native frames too when asked (`run --native`) or when a
process holds a GPU but its Python line does not say why it waits.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from hangdoctor.analysis.device import device_wait, uses_gpu
from hangdoctor.evidence.model import Frame, PythonThread
from hangdoctor.probes.procfs import read_open_files
from hangdoctor.probes.pystacks import StackOptions, dump_stacks, find_py_spy
from hangdoctor.probes.sources import with_source

PEEK_TIMEOUT_S = 3.0  # one py-spy dump
PEEK_BUDGET_S = 8.0  # all of them: the supervisor's watch loop waits for the answer
_MAX_PROCESSES = 8


def _with_innermost_source(frames: tuple[Frame, ...]) -> tuple[Frame, ...]:
    """The innermost Python frame with its source line: the line that may call `.item()`."""
    for index, frame in enumerate(frames):
        if not frame.native:
            return (*frames[:index], with_source(frame), *frames[index + 1 :])
    return frames


def _waits(threads: dict[int, PythonThread], gpu: bool) -> bool:
    return any(
        device_wait(_with_innermost_source(t.frames), gpu=gpu) is not None for t in threads.values()
    )


def _process_waits(pid: int, binary: str, native: bool, deadline: float) -> bool:
    gpu = uses_gpu(read_open_files(pid))
    for with_native in (True,) if native else (False, True) if gpu else (False,):
        left = deadline - time.monotonic()
        if left <= 0.1:
            return False
        options = StackOptions(
            native=with_native, locals=False, timeout_s=min(PEEK_TIMEOUT_S, left)
        )
        threads, error = dump_stacks(pid, binary, options)
        if error is None and _waits(threads, gpu):
            return True
    return False


def waits_for_device(pids: Sequence[int], native: bool = False) -> bool:
    """Whether every one of these (busy) processes has a thread waiting for the GPU now."""
    binary = find_py_spy()
    if not pids or binary is None or len(pids) > _MAX_PROCESSES:
        return False
    deadline = time.monotonic() + PEEK_BUDGET_S
    return all(_process_waits(pid, binary, native, deadline) for pid in pids)
