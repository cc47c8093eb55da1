"""What the watchdog reads each second, inside the watched process, to feed `run`'s policy
(`supervise.policy`): the status files the probe writes (plain JSON: no pydantic in the job)
and, from /proc, the CPU and I/O of the process tree it watches.

The same measures as `run`'s light sampler (`analysis.activity`: a tree computes above
COMPUTING_SHARE of a core, moves data above IO_WORK_BYTES_PER_S), read more simply: one
process tree, no NVML. A unit test keeps the numbers equal to the sampler's.
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

from hangdoctor.instrument.bootstrap import _hangdoctor_protocol as protocol
from hangdoctor.supervise.policy import Counters, PhaseEntry

COMPUTING_SHARE = 0.3  # = analysis.activity.COMPUTING_SHARE
MIN_COMPUTING_CORES = 0.05  # = analysis.activity.MIN_COMPUTING_CORES
IO_WORK_BYTES_PER_S = 64 * 1024  # = analysis.activity.IO_WORK_BYTES_PER_S
_TICKS = os.sysconf("SC_CLK_TCK")
_MAX_PROCESSES = 4096  # of one tree, at most: a fork bomb must not stall the watchdog


@dataclass(frozen=True)
class Reading:
    """One look at the job."""

    counters: Counters
    phases: tuple[tuple[PhaseEntry, ...], ...]  # per live process, outermost first
    ranks: int  # processes that know their rank
    runnable: bool  # a process of the tree was running (state R)
    cpu_s: float  # CPU seconds of the tree so far (children that exited included)
    io_bytes: float  # written, and read from storage, by the tree so far
    share: float  # of a core, what one runnable task can get on the machine now
    #: a live process says it compiles (a jitted function's first call, a tf.function's
    #: tracing): a compile phase, under the compile budget
    compiling: bool = False


def _alive(pid: int) -> bool:
    return os.path.exists(f"/proc/{pid}")


def read_statuses(status_dir: Path) -> list[dict[str, object]]:
    """The status of each live process that writes one (a rank that exited, or a process of
    an earlier restart, is not the job any more)."""
    found: list[dict[str, object]] = []
    try:
        names = os.listdir(status_dir)
    except OSError:
        return found
    for name in names:
        if not (name.startswith(protocol.STATUS_PREFIX) and name.endswith(protocol.STATUS_SUFFIX)):
            continue
        number = name[len(protocol.STATUS_PREFIX) : -len(protocol.STATUS_SUFFIX)]
        if not number.isdecimal() or not _alive(int(number)):
            continue
        with contextlib.suppress(OSError, ValueError):
            data = json.loads((status_dir / name).read_bytes())
            if isinstance(data, dict):
                found.append(data)
    return found


def _count(status: dict[str, object], key: str) -> int:
    value = status.get(key)
    return value if isinstance(value, int) else 0


def _phases(status: dict[str, object]) -> tuple[PhaseEntry, ...]:
    entries: list[PhaseEntry] = []
    raw = status.get("phases")
    for phase in raw if isinstance(raw, list) else []:
        if not isinstance(phase, dict):
            continue
        name, budget, entered = phase.get("name"), phase.get("budget_s"), phase.get("entered_at")
        if isinstance(name, str) and isinstance(entered, int | float):
            entries.append(
                (name, float(budget) if isinstance(budget, int | float) else None, float(entered))
            )
    return tuple(entries)


def tree(root_pid: int) -> list[int]:
    """The root and its descendants, from /proc/PID/task/TID/children."""
    pids, index = [root_pid], 0
    while index < len(pids) and len(pids) < _MAX_PROCESSES:
        pid = pids[index]
        index += 1
        try:
            tasks = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tasks:
            with (
                contextlib.suppress(OSError, ValueError),
                open(f"/proc/{pid}/task/{tid}/children", encoding="ascii") as handle,
            ):
                pids += [int(child) for child in handle.read().split()]
    return pids


def _stat(pid: int) -> tuple[str, float] | None:
    """(state, CPU seconds of the process and its waited-for children)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
        return fields[0], sum(int(value) for value in fields[11:15]) / _TICKS
    except (OSError, ValueError, IndexError):
        return None


def _io(pid: int, status: dict[str, object] | None) -> float:
    """Bytes written by any write call, and read from storage (as the sampler counts them);
    where /proc/PID/io is refused (ptrace refused), what the process noted of itself."""
    total = 0.0
    try:
        with open(f"/proc/{pid}/io", encoding="ascii") as io:
            for line in io:
                key, _, value = line.partition(":")
                if key in ("wchar", "read_bytes"):
                    total += int(value)
    except OSError:
        own = [(status or {}).get(key) for key in ("write_chars", "read_bytes")]
        return float(sum(value for value in own if isinstance(value, int)))
    except ValueError:
        pass
    return total


def _share() -> float:
    """What one runnable task can get of a core now: usable cores over runnable tasks."""
    try:
        cores = max(1, len(os.sched_getaffinity(0)))
        with open("/proc/stat", encoding="ascii") as handle:
            running = next(
                int(line.split()[1]) for line in handle if line.startswith("procs_running ")
            )
    except (OSError, ValueError, IndexError, StopIteration):
        return 1.0
    return min(1.0, cores / running) if running else 1.0


def read(root_pid: int, status_dir: Path) -> Reading:
    """Look at the job once."""
    statuses = read_statuses(status_dir)
    by_pid = {s.get("pid"): s for s in statuses}
    states, cpu, io = [], 0.0, 0.0
    for pid in tree(root_pid):
        stat = _stat(pid)
        if stat is not None:
            states.append(stat[0])
            cpu += stat[1]
            io += _io(pid, by_pid.get(pid))
    return Reading(
        counters=Counters(
            steps=sum(_count(s, "steps") for s in statuses),
            batches=sum(_count(s, "batches") for s in statuses),
            collectives=sum(_count(s, "collectives") for s in statuses),
            losses=sum(_count(s, "losses_seen") for s in statuses),
            nonfinite_losses=sum(_count(s, "nonfinite_losses") for s in statuses),
            heartbeats=sum(_count(s, "heartbeats") for s in statuses),
            phase_moves=sum(_count(s, "phase_moves") for s in statuses),
        ),
        phases=tuple(_phases(s) for s in statuses if s.get("exiting_at") is None),
        ranks=sum(1 for s in statuses if isinstance(s.get("rank"), int)),
        runnable="R" in states,
        cpu_s=cpu,
        io_bytes=io,
        share=_share(),
        compiling=any(s.get("compiling") and s.get("exiting_at") is None for s in statuses),
    )


def computing(cpu_cores: float, share: float) -> bool:
    """Whether the tree used the CPU like something that computes (the sampler's test)."""
    return cpu_cores >= max(MIN_COMPUTING_CORES, COMPUTING_SHARE * share)
