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


def _number(text: str | None) -> int | None:
    text = (text or "").strip()
    return int(text) if text.isdigit() else None


def env_rank(process: ProcessEvidence) -> int | None:
    """RANK from the environment, when it is a number."""
    return _number(process.environ.get("RANK"))


_RANK_OPTIONS = ("--rank", "--global-rank", "--global_rank", "--node-rank-global")
_SPAWN_FILE = "torch/multiprocessing/spawn.py"


def _option(cmdline: tuple[str, ...], names: tuple[str, ...]) -> int | None:
    """`--rank 1` or `--rank=1` on a command line."""
    for index, word in enumerate(cmdline):
        name, equals, value = word.partition("=")
        if name in names:
            return _number(
                value if equals else (cmdline[index + 1] if index + 1 < len(cmdline) else None)
            )
    return None


def _spawn_index(process: ProcessEvidence) -> int | None:
    """The index torch.multiprocessing.spawn gave the process (`_wrap(fn, i, ...)`): mp.spawn
    passes it as the first argument of the function it starts, which uses it as the rank."""
    for thread in process.threads:
        for frame in thread.python.frames if thread.python else ():
            if frame.function == "_wrap" and frame.file.replace("\\", "/").endswith(_SPAWN_FILE):
                found = next((v.repr for v in frame.locals if v.name == "i"), None)
                return _number(found)
    return None


_C10D_FILE = "torch/distributed/distributed_c10d.py"


def _init_locals(process: ProcessEvidence) -> dict[str, str | None]:
    """The locals of `init_process_group` while the process is still in there (py-spy reads
    them): the arguments the process passed."""
    for thread in process.threads:
        for frame in thread.python.frames if thread.python else ():
            if frame.function == "init_process_group" and frame.file.replace("\\", "/").endswith(
                _C10D_FILE
            ):
                return {v.name: v.repr for v in frame.locals}
    return {}


_RENDEZVOUS_FILE = "torch/distributed/rendezvous.py"
_RENDEZVOUS_FUNCTIONS = frozenset(
    {
        "_create_c10d_store",
        "_env_rendezvous_handler",
        "_tcp_rendezvous_handler",
        "_file_rendezvous_handler",
    }
)


def _rendezvous_locals(process: ProcessEvidence) -> dict[str, str | None]:
    """The locals of the rendezvous that `init_process_group` is waiting in (the store, for
    the peers): the rank and world size it really uses, read from the environment as the
    process saw it then, also when the script set them itself (`os.environ["RANK"] = "0"`),
    which /proc/PID/environ, fixed at the start, does not show."""
    for thread in process.threads:
        for frame in thread.python.frames if thread.python else ():
            if frame.function in _RENDEZVOUS_FUNCTIONS and frame.file.replace("\\", "/").endswith(
                _RENDEZVOUS_FILE
            ):
                return {v.name: v.repr for v in frame.locals}
    return {}


def rendezvous_address(process: ProcessEvidence) -> str | None:
    """`host:port` of the store the process's rendezvous waits at, from its locals."""
    values = _rendezvous_locals(process)
    host = values.get("master_addr") or values.get("hostname")
    port = values.get("master_port") or values.get("port")
    return f"{host.strip(chr(34) + chr(39))}:{port}" if host and port else None


def init_arguments(process: ProcessEvidence) -> tuple[int | None, int | None]:
    """(rank, world_size) as the process passed them to `init_process_group` (-1, "from the
    environment", reads as None), else as its rendezvous read them from the environment."""
    values = _init_locals(process)
    rank, size = _number(values.get("rank")), _number(values.get("world_size"))
    if rank is None or size is None:
        store = _rendezvous_locals(process)
        rank = rank if rank is not None else _number(store.get("rank"))
        size = size if size is not None else _number(store.get("world_size"))
    return rank, size


def init_method(process: ProcessEvidence) -> str | None:
    """The `init_method` URL the process passed to `init_process_group`, if any."""
    text = (_init_locals(process).get("init_method") or "").strip("'\"")
    return text if text and text != "None" else None


_WORLD_OPTIONS = ("--world-size", "--world_size", "--nprocs", "--num-processes")


def world_size_of(process: ProcessEvidence) -> int | None:
    """The world size the process asked for: the argument it gave init_process_group (which
    wins over the environment), WORLD_SIZE, or `--world-size N` on its command line."""
    for size in (
        init_arguments(process)[1],
        _number(process.environ.get("WORLD_SIZE")),
        _option(process.cmdline, _WORLD_OPTIONS),
    ):
        if size is not None:
            return size
    return None


def own_rank(process: ProcessEvidence, reported: Mapping[int, int]) -> int | None:
    """The process's own rank, by the best source there is: what the process itself reported
    (`dist.get_rank()`, through the instrumentation or its Flight Recorder), RANK in its
    environment (torchrun, accelerate, DeepSpeed), `--rank N` on its command line, the index
    torch.multiprocessing.spawn gave it, the rank it passes to init_process_group, or
    LOCAL_RANK beside WORLD_SIZE (Lightning's children,
    on one node)."""
    for rank in (
        reported.get(process.pid),
        env_rank(process),
        init_arguments(process)[0],
        _option(process.cmdline, _RANK_OPTIONS),
        _spawn_index(process),
    ):
        if rank is not None:
            return rank
    environ = process.environ
    if "WORLD_SIZE" in environ and _number(environ.get("NODE_RANK") or "0") == 0:
        return _number(environ.get("LOCAL_RANK"))
    return None


def assign_roles(
    processes: Mapping[int, ProcessEvidence],
    root_pid: int,
    reported: Mapping[int, int] | None = None,
) -> dict[int, tuple[Role, int | None]]:
    """(role, rank) per pid; `reported` is pid -> rank as the processes reported it. A child
    inherits its rank's environment, so a process whose parent has the same rank is a worker or
    child of that rank, not a rank."""
    known = reported or {}
    ranks = {pid: own_rank(process, known) for pid, process in processes.items()}
    roles: dict[int, tuple[Role, int | None]] = {}

    def rank_of_ancestors(pid: int) -> int | None:
        seen = set()
        current = processes.get(pid)
        while current is not None and current.pid not in seen:
            seen.add(current.pid)
            rank = ranks.get(current.pid)
            if rank is not None:
                return rank
            current = processes.get(current.ppid) if current.ppid is not None else None
        return None

    for pid, process in processes.items():
        rank = ranks[pid]
        parent = processes.get(process.ppid) if process.ppid is not None else None
        parent_rank = ranks.get(parent.pid) if parent is not None else None
        if process.outside_job:
            roles[pid] = (Role.OTHER, None)  # not the job's, though it waits on it
        elif is_dataloader_worker(process):
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
            climbed = {pid}  # a bundle from elsewhere may hold a cycle of parents
            while (
                current is not None
                and current.ppid is not None
                and current.ppid in processes
                and current.ppid not in climbed
            ):
                climbed.add(current.ppid)
                has_rank_descendant.add(current.ppid)
                current = processes.get(current.ppid)
    for pid in has_rank_descendant:
        if roles[pid][0] is not Role.RANK:
            roles[pid] = (Role.LAUNCHER, None)
    if root_pid in roles and roles[root_pid][0] is Role.CHILD:
        roles[root_pid] = (Role.MAIN, None)
    return roles
