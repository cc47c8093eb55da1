"""Where the stack signal may go without harming the process: faulthandler's handler reads every
thread's frames without the GIL, and reading those of a thread that runs Python meanwhile can
crash the process (seen here: a SIGSEGV in the dump while a thread of multiprocessing's pool ran
its selector). The signal is therefore sent only while at most one thread of the process is
runnable, and then to that thread itself (tgkill), which the handler interrupts: every other
thread is asleep, its frames still."""

from __future__ import annotations

import ctypes
import functools
import os
from collections.abc import Callable

from hangdoctor.probes.procfs import parse_stat


def _states(pid: int) -> dict[int, str] | None:
    """Each thread's state letter, from /proc/PID/task/TID/stat (None: the process is gone)."""
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return None
    states: dict[int, str] = {}
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/stat", encoding="ascii", errors="replace") as f:
                parsed = parse_stat(f.read())
        except OSError:
            continue
        if parsed is not None and tid.isdecimal():
            states[int(tid)] = parsed[0]
    return states


def safe_target(pid: int) -> int | None:
    """The thread to send the stack signal to now: the one runnable thread, or the process
    itself when none runs; None while two or more run (or it is gone)."""
    states = _states(pid)
    if not states:
        return None
    running = [tid for tid, state in states.items() if state == "R"]
    if len(running) > 1:
        return None
    return running[0] if running else pid


@functools.cache
def _tgkill() -> Callable[[int, int, int], int] | None:
    try:
        function: Callable[[int, int, int], int] = ctypes.CDLL(None, use_errno=True).tgkill
        return function  # glibc >= 2.30
    except (OSError, AttributeError):
        return None


def send(pid: int, tid: int, signum: int) -> bool:
    """Deliver `signum` to thread `tid` of `pid` (to the process where tid is pid)."""
    if tid == pid:
        os.kill(pid, signum)
        return True
    tgkill = _tgkill()
    if tgkill is None:
        return False
    return int(tgkill(pid, tid, signum)) == 0
