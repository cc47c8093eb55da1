"""The role of each process in a job: launcher, main, rank, DataLoader worker, child, other."""

from __future__ import annotations

from collections.abc import Mapping
from enum import Enum

from hangdoctor.analysis.frames import in_function
from hangdoctor.evidence.model import Frame, ProcessEvidence

_WORKER_FILE = "torch/utils/data/_utils/worker.py"
_HELPER_FILES = ("multiprocessing/resource_tracker.py", "multiprocessing/forkserver.py")


class Role(str, Enum):
    """A process's role, as report.schema.json names it."""

    LAUNCHER = "launcher"
    MAIN = "main"
    RANK = "rank"
    DATALOADER_WORKER = "dataloader_worker"
    CHILD = "child"
    OTHER = "other"


def _frames(process: ProcessEvidence) -> list[Frame]:
    return [f for t in process.threads if t.python for f in t.python.frames]


def is_dataloader_worker(process: ProcessEvidence) -> bool:
    """A PyTorch DataLoader worker runs `_worker_loop` in its main thread."""
    return in_function(_frames(process), _WORKER_FILE, {"_worker_loop"})


def _is_helper(process: ProcessEvidence) -> bool:
    return any(f.file.replace("\\", "/").endswith(_HELPER_FILES) for f in _frames(process))


def env_rank(process: ProcessEvidence) -> int | None:
    """RANK from the environment, when it is a number."""
    value = process.environ.get("RANK", "")
    return int(value) if value.strip().lstrip("-").isdigit() else None


def assign_roles(
    processes: Mapping[int, ProcessEvidence], root_pid: int
) -> dict[int, tuple[Role, int | None]]:
    """(role, rank) per pid. Ranks carry RANK in their environment; their children inherit it,
    so a process whose parent has the same RANK is a worker or child of that rank, not a rank."""
    roles: dict[int, tuple[Role, int | None]] = {}

    def rank_of_ancestors(pid: int) -> int | None:
        seen = set()
        current = processes.get(pid)
        while current is not None and current.pid not in seen:
            seen.add(current.pid)
            rank = env_rank(current)
            if rank is not None:
                return rank
            current = processes.get(current.ppid) if current.ppid is not None else None
        return None

    for pid, process in processes.items():
        rank = env_rank(process)
        parent = processes.get(process.ppid) if process.ppid is not None else None
        parent_rank = env_rank(parent) if parent is not None else None
        if is_dataloader_worker(process):
            roles[pid] = (Role.DATALOADER_WORKER, rank_of_ancestors(pid))
        elif rank is not None and (parent is None or parent_rank != rank):
            roles[pid] = (Role.RANK, rank)
        elif _is_helper(process):
            roles[pid] = (Role.OTHER, None)
        else:
            roles[pid] = (Role.CHILD, rank_of_ancestors(pid))

    has_rank_descendant: set[int] = set()
    for pid, (role, _rank) in roles.items():
        if role is Role.RANK:
            current = processes.get(pid)
            while current is not None and current.ppid is not None and current.ppid in processes:
                has_rank_descendant.add(current.ppid)
                current = processes.get(current.ppid)
    for pid in has_rank_descendant:
        if roles[pid][0] is not Role.RANK:
            roles[pid] = (Role.LAUNCHER, None)
    if root_pid in roles and roles[root_pid][0] is Role.CHILD:
        roles[root_pid] = (Role.MAIN, None)
    return roles
