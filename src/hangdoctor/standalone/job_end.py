"""Whether a watched job failed, from what its processes recorded as they ended
(`exit_record`) and what faulthandler wrote: the sidecar's judgement, before anything heavy is
imported (plain JSON, stdlib only).

A process that recorded a non-zero exit code failed (an uncaught exception, `sys.exit(3)`); one
that vanished without any record was killed by a signal: SIGSEGV and the like when faulthandler
wrote `fault-<pid>.txt`, SIGTERM when it wrote `stopped-<pid>.txt` (the launcher ending the
ranks that survived the one that failed: a consequence, named only when nothing else failed),
else SIGKILL, the one signal no process can see coming (the OOM killer, `kill -9`). A job that
the watchdog ended at a hang has its hang report; one the user stopped (Ctrl-C) is no failure.
"""

from __future__ import annotations

import signal
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

#: How faulthandler names the fatal signal on the first line of `fault-<pid>.txt`.
_FATAL_ERRORS = {
    "Segmentation fault": signal.SIGSEGV,
    "Aborted": signal.SIGABRT,
    "Bus error": signal.SIGBUS,
    "Floating-point exception": signal.SIGFPE,
    "Floating point exception": signal.SIGFPE,
    "Illegal instruction": signal.SIGILL,
}
_INTERRUPTED = 130  # 128 + SIGINT


@dataclass(frozen=True)
class ProcessEnd:
    """How one process of the job ended."""

    pid: int
    rank: int | None
    at: float  # when (Unix time): its record, or when the sidecar saw it gone
    exit_code: int  # shell-style: 128+N for signal N
    signal: int | None = None
    traceback: str | None = None
    stopped: bool = False  # SIGTERM: the launcher ending it after another failed


@dataclass(frozen=True)
class JobFailure:
    """A job that failed: the first failure decides the exit code; every one is evidence."""

    first: ProcessEnd
    failures: tuple[ProcessEnd, ...]  # first first

    @property
    def exit_code(self) -> int:
        return self.first.exit_code

    @property
    def signal(self) -> int | None:
        return self.first.signal


def fatal_signal(fault_text: str) -> int:
    """The signal faulthandler named (`Fatal Python error: Segmentation fault`); SIGSEGV when
    it cannot be told."""
    for line in fault_text.splitlines():
        if line.startswith("Fatal Python error:"):
            name = line.split(":", 1)[1].strip()
            return int(_FATAL_ERRORS.get(name, signal.SIGSEGV))
    return int(signal.SIGSEGV)


def _number(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _time(status: Mapping[str, object]) -> float:
    for key in ("exiting_at", "updated_at"):
        value = status.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
    return 0.0


def process_end(
    status: Mapping[str, object], gone_at: float | None, fault: str | None, stopped: bool
) -> ProcessEnd | None:
    """How a process that recorded its end (`records_exit`) ended; None when it did not record
    (or is still running: `gone_at` None)."""
    pid = _number(status.get("pid"))
    if pid is None or not status.get("records_exit") or gone_at is None:
        return None
    rank = _number(status.get("rank"))
    code = _number(status.get("exit_code"))
    text = status.get("exit_traceback")
    traceback = text if isinstance(text, str) and text.strip() else None
    if code is not None:
        return ProcessEnd(pid, rank, _time(status), code, traceback=traceback)
    if fault is not None:
        number = fatal_signal(fault)
        return ProcessEnd(pid, rank, gone_at, 128 + number, signal=number, traceback=traceback)
    if stopped:
        number = int(signal.SIGTERM)
        return ProcessEnd(pid, rank, gone_at, 128 + number, signal=number, stopped=True)
    number = int(signal.SIGKILL)
    return ProcessEnd(pid, rank, gone_at, 128 + number, signal=number, traceback=traceback)


def judge(
    statuses: Iterable[Mapping[str, object]],
    gone_at: Callable[[int], float | None],
    faults: Mapping[int, str],
    stopped: Iterable[int],
) -> JobFailure | None:
    """The job's failure, or None when it ended well (or at a hang, or at the user's Ctrl-C).
    `gone_at(pid)`: when the process was seen gone, None while it runs; `faults`: the text of
    each non-empty `fault-<pid>.txt`; `stopped`: the pids with a non-empty `stopped-<pid>.txt`."""
    stopped_pids = set(stopped)
    ends: list[ProcessEnd] = []
    for status in statuses:
        pid = _number(status.get("pid"))
        if pid is None:
            continue
        if status.get("exit_hung"):
            return None  # the watchdog ended the job at a hang: the hang's report says it
        end = process_end(status, gone_at(pid), faults.get(pid), pid in stopped_pids)
        if end is not None:
            ends.append(end)
    failed = [e for e in ends if e.exit_code != 0]
    if not failed or all(e.exit_code == _INTERRUPTED and e.signal is None for e in failed):
        return None
    # What failed first, of its own: a rank that the launcher stopped came after.
    failed.sort(key=lambda e: (e.stopped, e.exit_code == _INTERRUPTED, e.at, e.pid))
    return JobFailure(first=failed[0], failures=tuple(failed))
