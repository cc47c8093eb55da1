"""The other processes of a distributed job on this host, found from one of its ranks.

Users pick a pid from `ps` or `nvidia-smi`: usually one rank. A capture of that rank's tree
alone would show its peers as absent, which is not the same as exited. The processes of one
job share a rendezvous in their environment (TORCHELASTIC_RUN_ID, set by torchrun for every
rank; else MASTER_ADDR and MASTER_PORT) and a user; the launcher is the process that started
them all (torchrun's elastic agent, the `mp.spawn` parent). A pid with no peers outside its own tree
is left as it is: its tree is already the whole job.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import psutil

Key = tuple[str, ...]


@dataclass(frozen=True)
class JobScope:
    """Where the job of the dumped pid lies."""

    pid: int  # the pid the user named
    launcher: int | None  # the process that started every process of the job, if found
    peers: tuple[int, ...]  # the job's top processes (ranks) outside the pid's own tree

    @property
    def roots(self) -> tuple[int, ...]:
        """What to capture to see the whole job: the launcher's tree, else every rank's."""
        if self.launcher is not None:
            return (self.launcher,)
        return (self.pid, *self.peers)


def rendezvous_key(environ: dict[str, str]) -> Key | None:
    """What every process of one job has in its environment, and no other job's has."""
    run_id = environ.get("TORCHELASTIC_RUN_ID", "")
    address, port = environ.get("MASTER_ADDR", ""), environ.get("MASTER_PORT", "")
    # torchrun's run id defaults to "none" for every job: the port, which two jobs on one
    # host cannot share, tells them apart.
    if run_id or (address and port):
        return (run_id, address, port)
    return None


def _key_of(process: psutil.Process) -> Key | None:
    try:
        return rendezvous_key(process.environ())
    except (psutil.Error, OSError):
        return None


def _uid(process: psutil.Process) -> int | None:
    try:
        return int(process.uids().real)
    except (psutil.Error, OSError):
        return None


def _top(pid: int, members: dict[int, int]) -> int:
    """The outermost member above `pid` (a DataLoader worker's rank); `members` maps each
    member to its parent."""
    while members.get(pid) in members:
        pid = members[pid]
    return pid


def find_job(pid: int) -> JobScope:
    """The job `pid` belongs to; a scope of `pid` alone when it is no rank of a job."""
    try:
        target = psutil.Process(pid)
    except psutil.Error:
        return JobScope(pid, None, ())
    key, uid = _key_of(target), _uid(target)
    if key is None or uid is None:
        return JobScope(pid, None, ())
    members: dict[int, int] = {}  # pid -> ppid of every process with the job's rendezvous
    for process in psutil.process_iter(["pid", "ppid", "uids"]):
        info = process.info
        uids = info.get("uids")
        if uids is None or uids.real != uid or info["pid"] == os.getpid():
            continue
        if _key_of(process) == key:
            members[info["pid"]] = info["ppid"]
    members.setdefault(pid, target.ppid())
    top = _top(pid, members)
    tops = sorted({_top(member, members) for member in members})
    peers = tuple(p for p in tops if p != top)
    if not peers:
        return JobScope(pid, None, ())
    parents = {members[p] for p in tops}
    launcher = None
    if len(parents) == 1:
        parent = parents.pop()
        # The one process that started every rank; not init nor someone else's process.
        if parent > 1 and _uid_of_pid(parent) == uid:
            launcher = parent
    return JobScope(pid, launcher, peers)


def _uid_of_pid(pid: int) -> int | None:
    try:
        return _uid(psutil.Process(pid))
    except psutil.Error:
        return None
