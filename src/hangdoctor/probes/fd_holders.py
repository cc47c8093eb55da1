"""Processes outside the job's tree that the job depends on: those holding the other end of a
pipe the job holds, or the socket at the other end of one of its loopback connections.

A server started by a child shell with `&`, or a daemon that double-forked, is no descendant of
the job's root, yet a job thread may wait on it forever (issue 27). The kernel says who holds
what: `/proc/PID/fd` links name pipes and sockets by inode, and `/proc/PID/net/tcp` pairs the
two ends of a connection (https://www.kernel.org/doc/html/latest/networking/proc_net_tcp.html).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

import psutil

from hangdoctor.evidence.model import ProcessEvidence
from hangdoctor.probes.sockets import _address, _rows

#: What `run`'s output relay calls itself (`ps` shows it; at most 15 bytes).
RELAY_NAME = b"hd-relay"

#: Processes looked at, at most: a host of tens of thousands of processes is not read whole.
MAX_PROCESSES = 20_000


def _links(pid: int) -> set[str]:
    """The targets of `pid`'s descriptors (`pipe:[N]`, `socket:[N]`, paths); none if unreadable."""
    folder = f"/proc/{pid}/fd"
    try:
        names = os.listdir(folder)
    except OSError:
        return set()
    found = set()
    for name in names:
        try:
            found.add(os.readlink(f"{folder}/{name}"))
        except OSError:
            continue
    return found


def _tcp_rows(pid: int) -> list[tuple[str, str, str, int]]:
    """(local, remote, state hex, inode) of every TCP socket in `pid`'s network namespace."""
    rows = []
    for name in ("tcp", "tcp6"):
        for fields in _rows(Path(f"/proc/{pid}/net/{name}")):
            if len(fields) < 10 or not fields[9].isdecimal():
                continue
            try:
                rows.append((_address(fields[1]), _address(fields[2]), fields[3], int(fields[9])))
            except ValueError:
                continue
    return rows


def _port(address: str) -> str:
    return address.rsplit(":", 1)[-1]


def peer_sockets(pid: int, inodes: set[int]) -> set[int]:
    """The inodes of the sockets at the other end of these connections, on this host: the
    accepted socket whose addresses mirror ours, else (a connection still in the backlog) the
    listening socket of its port."""
    rows = _tcp_rows(pid)
    ours = [(local, remote) for local, remote, _state, inode in rows if inode in inodes]
    peers: set[int] = set()
    for local, remote in ours:
        if remote.endswith(":0"):
            continue  # a listening socket: its other ends are its clients
        mirror = {i for lo, re, _s, i in rows if lo == remote and re == local and i}
        if not mirror:
            mirror = {
                i
                for lo, _re, state, i in rows
                if state == "0A" and _port(lo) == _port(remote) and i
            }
        peers |= mirror
    return peers - inodes


def holders(wanted: set[str], exclude: Iterable[int]) -> list[int]:
    """Pids of the processes, not in `exclude`, that hold a descriptor in `wanted`."""
    if not wanted:
        return []
    skip = set(exclude) | {os.getpid()} | _own_ancestors()
    found = []
    try:
        pids = sorted(int(n) for n in os.listdir("/proc") if n.isdecimal())
    except OSError:
        return []
    for pid in pids[:MAX_PROCESSES]:
        if pid not in skip and _links(pid) & wanted and not _our_relay(pid):
            found.append(pid)
    return found


def _our_relay(pid: int) -> bool:
    """Whether the process is a `run`'s output relay (`supervise/relay_process.py`, named
    RELAY_NAME): it holds the reading end of the job's output by design, and is hangdoctor's
    own, never something the job left behind."""
    try:
        with open(f"/proc/{pid}/comm", "rb") as comm:
            return comm.read().strip() == RELAY_NAME
    except OSError:
        return False


def _own_ancestors() -> set[int]:
    """hangdoctor's own parents (the shell, terminal, CI runner or test harness that started
    it): they hold the job's standard input and output, and are the user's session, not
    something the job left behind."""
    try:
        return {p.pid for p in psutil.Process().parents()}
    except psutil.Error:
        return set()


_POLLS = {"poll", "ppoll", "select", "pselect6", "epoll_wait", "epoll_pwait", "epoll_pwait2"}


def _read_pipe(target: str, mode: str | None) -> bool:
    return target.startswith("pipe:") and mode == "r"


_READS_WRITES = {"read", "readv", "pread64", "recvfrom", "recvmsg", "write", "writev", "sendto"}


def waited_targets(processes: Iterable[ProcessEvidence]) -> dict[int, set[str]]:
    """Per process, what its blocked threads read or write: the targets of the descriptors in
    their system calls (a pipe, a socket, a FIFO's path)."""
    found: dict[int, set[str]] = {}
    for process in processes:
        by_fd = {f.fd: f.target for f in process.open_files}
        for thread in process.threads:
            kernel = thread.kernel
            if kernel is None or kernel.state == "R":
                continue
            if kernel.syscall_name in _POLLS:
                # The descriptors polled are in user memory, out of reach: every pipe the
                # process reads from may be one (`subprocess.communicate` polls its pipes).
                found.setdefault(process.pid, set()).update(
                    f.target for f in process.open_files if _read_pipe(f.target, f.mode)
                )
                continue
            if kernel.syscall_name not in _READS_WRITES or not kernel.syscall_args:
                continue
            target = by_fd.get(int(kernel.syscall_args[0]))
            if target is not None:
                found.setdefault(process.pid, set()).add(target)
    return found


def outside_holders(processes: Iterable[ProcessEvidence]) -> list[int]:
    """Processes outside the job's that hold the other end of what a job thread is blocked
    reading or writing: the same pipe or FIFO, or the socket across a loopback connection."""
    processes = list(processes)
    wanted: set[str] = set()
    for pid, targets in waited_targets(processes).items():
        wanted |= {t for t in targets if not t.startswith(("socket:", "anon_inode:"))}
        sockets = {
            int(t[len("socket:[") : -1])
            for t in targets
            if t.startswith("socket:[") and t.endswith("]")
        }
        if sockets:
            wanted |= {f"socket:[{inode}]" for inode in peer_sockets(pid, sockets)}
    return holders(wanted, [p.pid for p in processes])
