"""One look at a busy job's stacks: is it computing, or waiting for the GPU, or spinning in
the standard library's machinery?

A host thread waiting for the device spins on a CPU core (CUDA's default synchronisation polls),
so a job stuck behind a kernel that never ends looks busy. So does a process whose only running
thread is a pool's housekeeping, re-scanning a dead worker while the user's threads wait
(`analysis.machinery`). When such a job has gone the idle threshold without progress, the
supervisor dumps each busy process once (py-spy, time-limited): Python frames first, which are
cheap; native frames too when asked (`run --native`) or when a process holds a GPU but its
Python line does not say why it waits.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from enum import Enum

from hangdoctor.analysis.device import device_wait, uses_gpu
from hangdoctor.analysis.machinery import polls_only, rests
from hangdoctor.evidence.model import Frame, PythonThread
from hangdoctor.probes.procfs import read_open_files, read_threads
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


class Look(Enum):
    """What one look at a busy process found it doing."""

    DEVICE = "waits for the device"
    MACHINERY = "spins in the machinery"
    RESTS = "rests"
    COMPUTES = "computes"


def _look(pid: int, binary: str, native: bool, deadline: float) -> Look:
    gpu = uses_gpu(read_open_files(pid))
    seen = Look.COMPUTES
    for with_native in (True,) if native else (False, True) if gpu else (False,):
        left = deadline - time.monotonic()
        if left <= 0.1:
            return Look.COMPUTES
        options = StackOptions(
            native=with_native, locals=False, timeout_s=min(PEEK_TIMEOUT_S, left)
        )
        threads, error = dump_stacks(pid, binary, options)
        if error is not None:
            continue
        if _waits(threads, gpu):
            return Look.DEVICE
        if seen is Look.COMPUTES:
            seen = (
                Look.MACHINERY
                if polls_only(threads.values())
                else Look.RESTS
                if rests(threads, read_threads(pid))
                else Look.COMPUTES
            )
    return seen


def waits_rather_than_computes(pids: Sequence[int], native: bool = False) -> bool:
    """Whether these (busy) processes wait rather than compute now: each waits for the GPU,
    spins in the machinery or rests, and at least one waits or spins (resting alone proves
    nothing: a job between two bursts of work rests too)."""
    binary = find_py_spy()
    if not pids or binary is None or len(pids) > _MAX_PROCESSES:
        return False
    deadline = time.monotonic() + PEEK_BUDGET_S
    looks: set[Look] = set()
    for pid in pids:
        look = _look(pid, binary, native, deadline)
        if look is Look.COMPUTES:
            return False
        looks.add(look)
    return bool(looks & {Look.DEVICE, Look.MACHINERY})
