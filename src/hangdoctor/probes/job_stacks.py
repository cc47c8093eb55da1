"""Python stacks written by the job itself, for processes that py-spy may not read (ptrace
refused): the instrumentation registered faulthandler for a real-time signal, and names it in
`threads-<pid>.json` beside a map from pthread ids to kernel thread ids. Sending that signal
makes faulthandler append every thread's stack to `stacks-<pid>.txt`.

A signal nobody handles kills a process, so it is sent only where /proc/PID/status shows a
handler installed for it (SigCgt). Stacks read this way have no locals and say nothing of who
holds the GIL; each frame has file, line and function.
Format: https://docs.python.org/3/library/faulthandler.html#dumping-the-traceback
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import time
from collections.abc import Iterable
from pathlib import Path

from hangdoctor.evidence.model import Frame, PythonThread
from hangdoctor.instrument.bootstrap import _hangdoctor_protocol as protocol
from hangdoctor.probes.stack_signal import safe_target, send

_HEADER = re.compile(r"^(Current thread|Thread) (0x[0-9a-fA-F]+) \(most recent call first\):")
_FRAME = re.compile(r'^\s+File "(.*)", line (\d+) in (.*)$')
_SETTLE_S = 0.15  # a dump is complete when its file has stopped growing this long


def parse_dump(text: str, thread_ids: dict[int, int]) -> dict[int, PythonThread]:
    """faulthandler's all-threads dump, keyed by kernel thread id (threads that the map does
    not know are left out: a stack must be placed on the right thread or nowhere)."""
    threads: dict[int, PythonThread] = {}
    tid: int | None = None
    frames: list[Frame] = []

    def close() -> None:
        if tid is not None:
            threads[tid] = PythonThread(frames=tuple(frames), active=False)

    for line in text.splitlines():
        header = _HEADER.match(line)
        if header:
            close()
            tid = thread_ids.get(int(header[2], 16))
            frames = []
            continue
        frame = _FRAME.match(line)
        if frame and tid is not None:
            frames.append(Frame(file=frame[1], line=int(frame[2][:18]), function=frame[3]))
    close()
    return threads


def _thread_map(status_dir: Path, pid: int) -> tuple[int, dict[int, int]] | None:
    try:
        data = json.loads((status_dir / protocol.thread_map_file(pid)).read_text())
        signal_number = int(data["signal"])
        threads = {int(ident): int(native) for ident, native in data["threads"].items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError, OverflowError):
        return None
    return signal_number, threads


def handles_signal(pid: int, signal_number: int) -> bool:
    """Whether `pid` has a handler installed for `signal_number` (its SigCgt mask)."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as handle:
            for line in handle:
                if line.startswith("SigCgt:"):
                    return bool(int(line.split()[1], 16) >> (signal_number - 1) & 1)
    except (OSError, ValueError, IndexError):
        pass
    return False


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def request_dumps(
    status_dir: Path, pids: Iterable[int], timeout_s: float = 2.0
) -> dict[int, tuple[str, dict[int, int]]]:
    """faulthandler's text that each process (of those able to) writes on request, with its
    map from pthread ids to kernel thread ids, keyed by pid."""
    asked: dict[int, tuple[Path, int, dict[int, int]]] = {}
    pending: dict[int, tuple[int, dict[int, int]]] = {}
    for pid in pids:
        known = _thread_map(status_dir, pid)
        if known is not None and handles_signal(pid, known[0]):
            pending[pid] = known
    # Sent only where it cannot harm the process (`stack_signal`): a process whose threads
    # keep running Python side by side is waited for a little, then left without a dump.
    send_by = time.monotonic() + min(1.0, timeout_s / 2)
    while pending:
        for pid in list(pending):
            target = safe_target(pid)
            if target is None:
                continue
            signum, thread_ids = pending.pop(pid)
            path = status_dir / protocol.stacks_file(pid)
            offset = _size(path)
            with contextlib.suppress(OSError):
                if send(pid, target, signum):
                    asked[pid] = (path, offset, thread_ids)
        if not pending or time.monotonic() >= send_by:
            break
        time.sleep(0.02)
    deadline = time.monotonic() + timeout_s
    sizes = {pid: -1 for pid in asked}
    settled_at = dict.fromkeys(asked, 0.0)
    while asked and time.monotonic() < deadline:
        now = time.monotonic()
        for pid, (path, _, _) in asked.items():
            size = _size(path)
            if size != sizes[pid]:
                sizes[pid], settled_at[pid] = size, now
        if all(sizes[pid] > asked[pid][1] and now - settled_at[pid] >= _SETTLE_S for pid in asked):
            break
        time.sleep(0.05)
    dumps: dict[int, tuple[str, dict[int, int]]] = {}
    for pid, (path, offset, thread_ids) in asked.items():
        try:
            with path.open("rb") as handle:
                handle.seek(offset)
                text = handle.read(4 * 2**20).decode("utf-8", errors="replace")
        except OSError:
            continue
        if text.strip():
            dumps[pid] = (text, thread_ids)
    return dumps


def request_stacks(
    status_dir: Path, pids: Iterable[int], timeout_s: float = 2.0
) -> dict[int, dict[int, PythonThread]]:
    """The stacks that each process (of those able to) writes on request, keyed by pid."""
    stacks: dict[int, dict[int, PythonThread]] = {}
    for pid, (text, thread_ids) in request_dumps(status_dir, pids, timeout_s).items():
        threads = parse_dump(text, thread_ids)
        if threads:
            stacks[pid] = threads
    return stacks


def remove_stale(status_dir: Path) -> int:
    """Delete the stack and thread-map files of processes that have exited (a DataLoader
    without persistent workers forks new ones every epoch, each with its own files), and
    their fault and SIGTERM files when those stayed empty (a written one is evidence: kept);
    returns how many were removed."""
    removed = 0
    try:
        names = os.listdir(status_dir)
    except OSError:
        return 0
    for name in names:
        for prefix, suffix, only_empty in _PER_PROCESS:
            number = name[len(prefix) : -len(suffix)]
            ours = name.startswith(prefix) and name.endswith(suffix) and number.isdecimal()
            if not ours or os.path.exists(f"/proc/{number}"):
                continue
            if only_empty and _size(status_dir / name) > 0:
                continue
            with contextlib.suppress(OSError):
                os.unlink(status_dir / name)
                removed += 1
    return removed


# (prefix, suffix, removed only when empty) of the files each instrumented process writes.
_PER_PROCESS = (
    (protocol.STACKS_PREFIX, protocol.STACKS_SUFFIX, False),
    (protocol.THREAD_MAP_PREFIX, protocol.THREAD_MAP_SUFFIX, False),
    (protocol.FAULT_PREFIX, protocol.FAULT_SUFFIX, True),
    (protocol.STOPPED_PREFIX, protocol.STOPPED_SUFFIX, True),
)
