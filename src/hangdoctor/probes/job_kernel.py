"""The system calls, wait channels and open descriptors that /proc hides from hangdoctor where
ptrace is refused, as the job's processes read them of themselves at the supervisor's request
(`kernel-<pid>.json`, written by instrument/bootstrap/_hangdoctor_kernel.py).

A thread's self-read wait is put in a snapshot only where it cannot have changed in between:
the thread sleeps in both and used not one clock tick of CPU from one reading to the other (a
thread that did not run cannot have left its system call)."""

from __future__ import annotations

import json
import time
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path

from hangdoctor.evidence.model import (
    Bundle,
    KernelThreadState,
    OpenFile,
    ProcessEvidence,
    ThreadEvidence,
)
from hangdoctor.instrument.bootstrap import _hangdoctor_protocol as protocol
from hangdoctor.probes.procfs import parse_fdinfo_mode, parse_stat, parse_syscall
from hangdoctor.probes.sockets import read_sockets, socket_inodes
from hangdoctor.probes.syscalls import named_syscall

_MAX_BYTES = 4 * 1024 * 1024
_SLEEPING = ("S", "D")
_TICK_S = 0.011  # one clock tick (1/100 s) and rounding


@dataclass(frozen=True)
class SelfRead:
    """One process as it read itself: its threads by tid, and its open descriptors."""

    threads: Mapping[int, KernelThreadState]
    files: tuple[OpenFile, ...] = ()


def _files(raw: object) -> tuple[OpenFile, ...]:
    files = []
    for fd, entry in raw.items() if isinstance(raw, dict) else ():
        if not (str(fd).isdecimal() and isinstance(entry, list) and entry):
            continue
        flags = str(entry[1]) if len(entry) > 1 else ""
        files.append(
            OpenFile(fd=int(fd), target=str(entry[0]), mode=parse_fdinfo_mode(f"flags: {flags}"))
        )
    return tuple(sorted(files, key=lambda f: f.fd))


def parse_kernel_file(text: str) -> SelfRead:
    """One `kernel-<pid>.json`: each thread's state, CPU time, wait channel and system call,
    and the open descriptors; nothing when it is unusable."""
    try:
        data = json.loads(text)
        raw_threads = data["threads"]
    except (ValueError, KeyError, TypeError):
        return SelfRead({})
    threads: dict[int, KernelThreadState] = {}
    for tid, raw in raw_threads.items() if isinstance(raw_threads, dict) else ():
        if not (isinstance(raw, dict) and str(tid).isdecimal()):
            continue
        parsed = parse_stat(str(raw.get("stat", "")))
        if parsed is None:
            continue
        wchan = str(raw.get("wchan", "")).strip() or None
        number, args = parse_syscall(str(raw.get("syscall", "")))
        threads[int(tid)] = KernelThreadState(
            state=parsed[0],
            wchan=None if wchan == "0" else wchan,
            syscall=number,
            syscall_name=named_syscall(number, None if wchan == "0" else wchan)
            if number is not None
            else None,
            syscall_args=args,
            cpu_seconds=parsed[1],
        )
    return SelfRead(threads, _files(data.get("fds") if isinstance(data, dict) else None))


def _answered(status_dir: Path, pid: int, since: float) -> SelfRead | None:
    path = status_dir / protocol.kernel_file(pid)
    try:
        stat = path.stat()
        if stat.st_mtime < since or stat.st_size > _MAX_BYTES:
            return None
        return parse_kernel_file(path.read_text(encoding="ascii", errors="replace"))
    except OSError:
        return None


def collect_kernel_states(
    status_dir: Path, since: float, pids: Collection[int], timeout_s: float = 1.0
) -> dict[int, SelfRead]:
    """What each of `pids` wrote after `since` (the request's time), waiting up to `timeout_s`
    for the instrumented ones (their writer, or a forked child's answering thread, looks twice
    a second; one that holds the GIL in native code never answers)."""
    able = {pid for pid in pids if (status_dir / protocol.thread_map_file(pid)).exists()}
    found: dict[int, SelfRead] = {}
    deadline = time.monotonic() + timeout_s
    while True:
        for pid in able - found.keys():
            threads = _answered(status_dir, pid, since)
            if threads is not None:
                found[pid] = threads
        if found.keys() >= able or time.monotonic() >= deadline:
            return found
        time.sleep(0.1)


def _completed(thread: ThreadEvidence, own: KernelThreadState | None) -> ThreadEvidence:
    seen = thread.kernel
    if (
        own is None
        or seen is None
        or seen.syscall is not None
        or seen.state not in _SLEEPING
        or own.state not in _SLEEPING
        or own.syscall is None
        or abs(own.cpu_seconds - seen.cpu_seconds) > _TICK_S
    ):
        return thread
    kernel = seen.model_copy(
        update={
            "wchan": seen.wchan or own.wchan,
            "syscall": own.syscall,
            "syscall_name": own.syscall_name,
            "syscall_args": own.syscall_args,
        }
    )
    return thread.model_copy(update={"kernel": kernel})


def _completed_process(process: ProcessEvidence, own: SelfRead) -> ProcessEvidence:
    """The process with its threads' hidden waits and, where /proc listed none, its open
    descriptors as it read them (a descriptor is the process's for its whole wait)."""
    threads = tuple(_completed(t, own.threads.get(t.tid)) for t in process.threads)
    files = process.open_files or own.files
    return process.model_copy(update={"threads": threads, "open_files": files})


def with_self_read_waits(bundle: Bundle, found: Mapping[int, SelfRead]) -> Bundle:
    """`bundle` with the hidden waits filled in from what the processes read of themselves."""
    if not found:
        return bundle
    snapshots = tuple(
        snapshot.model_copy(
            update={
                "processes": tuple(
                    _completed_process(p, found[p.pid]) if p.pid in found else p
                    for p in snapshot.processes
                )
            }
        )
        for snapshot in bundle.snapshots
    )
    return bundle.model_copy(update={"snapshots": snapshots})


def with_their_sockets(bundle: Bundle) -> Bundle:
    """`bundle` with the endpoints of sockets that only the processes' own reading listed
    (the network namespace's tables stay readable where ptrace is refused)."""
    known = {s.inode for s in bundle.sockets}
    processes = bundle.snapshots[0].processes if bundle.snapshots else ()
    inodes = socket_inodes(processes) - known
    if not inodes:
        return bundle
    found = read_sockets(bundle.target_pid, inodes)
    return bundle.model_copy(update={"sockets": (*bundle.sockets, *found)}) if found else bundle
