"""End the job's whole tree: SIGTERM, a grace period, then SIGKILL; nothing left behind."""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Set

import psutil


def tree(root_pid: int, pgid: int | None, spare: Set[int] = frozenset()) -> list[psutil.Process]:
    """The job's processes: the root's descendants (we are a subreaper, so orphans stay ours),
    plus anything still in its process group; never ourselves nor the `spare` pids (the
    output relay, which must drain what the dying job still writes)."""
    found: dict[int, psutil.Process] = {}
    with contextlib.suppress(psutil.Error):
        root = psutil.Process(root_pid)
        found[root.pid] = root
        for child in root.children(recursive=True):
            found[child.pid] = child
    with contextlib.suppress(psutil.Error):
        for child in psutil.Process(os.getpid()).children(recursive=True):
            found.setdefault(child.pid, child)
    if pgid is not None:
        for process in psutil.process_iter():
            # A process that exits between the listing and the look is no longer ours to end.
            with contextlib.suppress(psutil.Error, ProcessLookupError, PermissionError):
                if os.getpgid(process.pid) == pgid:
                    found.setdefault(process.pid, process)
    for pid in (os.getpid(), *spare):
        found.pop(pid, None)
    return list(found.values())


def _signal_all(processes: list[psutil.Process], pgid: int | None, sig: int) -> None:
    if pgid is not None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, sig)
    for process in processes:
        with contextlib.suppress(psutil.Error):
            process.send_signal(sig)


def terminate_tree(
    root_pid: int, pgid: int | None, grace_s: float, spare: Set[int] = frozenset()
) -> None:
    """SIGTERM every process of the job, SIGKILL what is left after `grace_s`."""
    processes = tree(root_pid, pgid, spare)
    _signal_all(processes, pgid, signal.SIGTERM)
    _, alive = psutil.wait_procs(processes, timeout=grace_s)
    # Processes may have started while we waited: look again.
    leftovers = {p.pid: p for p in alive}
    leftovers.update({p.pid: p for p in tree(root_pid, pgid, spare) if p.is_running()})
    if leftovers:
        _signal_all(list(leftovers.values()), pgid, signal.SIGKILL)
        psutil.wait_procs(list(leftovers.values()), timeout=5)
    reap_orphans(exclude={root_pid, *spare})


def reap_orphans(exclude: Set[int]) -> None:
    """Collect exit statuses of adopted orphans that have died. Never the job itself (its
    status belongs to Popen, and reaping it here would lose its exit code) nor the relay."""
    with contextlib.suppress(psutil.Error):
        for child in psutil.Process(os.getpid()).children():
            if child.pid in exclude:
                continue
            with contextlib.suppress(psutil.Error, ChildProcessError, OSError):
                if child.status() == psutil.STATUS_ZOMBIE:
                    os.waitpid(child.pid, os.WNOHANG)
