"""Who watches, what, and where the report goes, for a process that called `watch()`.

In a job that a launcher started (torchrun sets LOCAL_RANK in each rank), every rank calls
`watch()`: each rank's probe writes its status into one folder per node, and local rank 0
alone runs the watchdog, over the launcher's whole tree, as `hangdoctor run` would on that
node: one report per node, every local rank in it. The ranks agree on the folder without
talking: it is named after the launcher (its pid and start time), which they share. A job of
several nodes gets a `node-N/` folder per node (torchrun's GROUP_RANK) in a report directory
they share. Without a launcher the process watches itself and its children.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

#: Where reports go without HANGDOCTOR_REPORT_DIR (as `run`'s: ./hangdoctor-reports/...).
DEFAULT_REPORTS = Path("hangdoctor-reports")


@dataclass(frozen=True)
class WatchPlan:
    """What this process does."""

    watchdog: bool  # this process runs the watchdog; else it only reports its status
    root_pid: int  # the tree the watchdog captures at a hang
    report_dir: Path
    status_dir: Path
    launched: bool  # a launcher (torchrun) started this process


def started_at(pid: int) -> float | None:
    """A process's start as a Unix time, from /proc (its start in ticks since boot)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as handle:
            ticks = int(handle.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/stat", encoding="ascii") as handle:
            boot = next(int(line.split()[1]) for line in handle if line.startswith("btime "))
        return boot + ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, StopIteration):
        return None


def _launched(env: Mapping[str, str]) -> bool:
    """Whether an elastic launcher (torchrun, torch.distributed.run) started this rank."""
    return bool(env.get("TORCHELASTIC_RUN_ID")) and env.get("LOCAL_RANK", "").isdigit()


def make_plan(
    report_dir: Path | None,
    env: Mapping[str, str] | None = None,
    pid: int | None = None,
    ppid: int | None = None,
) -> WatchPlan:
    """The plan for this process (`pid`, `ppid` and `env` default to its own)."""
    env = os.environ if env is None else env
    pid = os.getpid() if pid is None else pid
    ppid = os.getppid() if ppid is None else ppid
    launched = _launched(env)
    root = ppid if launched else pid
    if report_dir is None:
        started = started_at(root)
        stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(started or time.time()))
        report_dir = DEFAULT_REPORTS / f"{stamp}-watch-{root}"
    groups = env.get("GROUP_WORLD_SIZE", "")
    if launched and groups.isdigit() and int(groups) > 1:
        report_dir = report_dir / f"node-{env.get('GROUP_RANK', '0')}"
    report_dir = Path(os.path.abspath(report_dir))
    return WatchPlan(
        watchdog=not launched or env.get("LOCAL_RANK") == "0",
        root_pid=root,
        report_dir=report_dir,
        status_dir=report_dir / "progress",
        launched=launched,
    )


#: Processes that `HANGDOCTOR_WATCH=1` leaves alone: launchers (their ranks watch), the worker
#: processes multiprocessing starts (their parent's watchdog sees them), hangdoctor itself and
#: package tools.
_NOT_JOBS = (
    "torch.distributed.run",
    "torch.distributed.launch",
    "hangdoctor",
    "pip",
    "py_spy",
    "ensurepip",
    "venv",
)
_NOT_JOB_SCRIPTS = ("torchrun", "hangdoctor", "pip", "pip3", "py-spy", "accelerate", "deepspeed")


def started_by_multiprocessing(argv: Sequence[str]) -> bool:
    """Whether multiprocessing started the interpreter of `argv` (sys.orig_argv): a spawned or
    forkserver worker, which runs the parent's main module again as `__mp_main__`."""
    return "--multiprocessing-fork" in argv or any(
        arg.startswith("from multiprocessing.") for arg in argv
    )


def is_a_job(argv: Sequence[str]) -> bool:
    """Whether the interpreter started with `argv` (sys.orig_argv) runs a job to watch."""
    args = list(argv[1:])
    while args and args[0].startswith("-") and args[0] not in ("-m", "-c"):
        args.pop(0)  # interpreter options: -u, -O, -X dev (its value is not an option: rare)
    if not args:
        return False  # an interactive interpreter
    if started_by_multiprocessing(argv):
        return False
    if args[0] == "-c":
        return True
    if args[0] == "-m":
        module = args[1] if len(args) > 1 else ""
        return not any(module == name or module.startswith(name + ".") for name in _NOT_JOBS)
    return os.path.basename(args[0]) not in _NOT_JOB_SCRIPTS
