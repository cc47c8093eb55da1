"""Recognise well-known failure lines in a job's output and in the kernel log.

Message formats, checked against PyTorch 2.13 (torch/csrc/DataLoader.cpp,
torch/utils/data/dataloader.py) and the Linux OOM killer (mm/oom_kill.c).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

_WORKER_KILLED = re.compile(
    r"DataLoader worker \(pid\(?s?\)? ?([\d, ]+)\) is killed by signal: ([^.]+)\.")
_WORKER_EXITED = re.compile(
    r"DataLoader worker \(pid\(?s?\)? ?([\d, ]+)\) exited unexpectedly(?: with exit code (-?\d+))?")
_OOM_KILLED = re.compile(r"(?:Memory cgroup )?[Oo]ut of memory: Killed process (\d+) \(([^)]*)\)")
_CUDA_OOM = re.compile(r"CUDA out of memory|OutOfMemoryError|CUBLAS_STATUS_ALLOC_FAILED")
_HOST_ALLOC = re.compile(r"\bMemoryError\b|Cannot allocate memory|std::bad_alloc|"
                         r"DefaultCPUAllocator: can't allocate memory")


@dataclass(frozen=True)
class LogMatch:
    """One recognised line."""

    kind: str
    line: str
    pids: tuple[int, ...] = ()
    detail: str | None = None


def _pids(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", text))


def scan(lines: Iterable[str]) -> list[LogMatch]:
    """Every recognised failure line, in order."""
    found: list[LogMatch] = []
    for line in lines:
        if match := _WORKER_KILLED.search(line):
            found.append(LogMatch("worker_killed", line.strip(), _pids(match[1]),
                                  match[2].strip()))
        elif match := _WORKER_EXITED.search(line):
            found.append(LogMatch("worker_exited", line.strip(), _pids(match[1]), match[2]))
        elif match := _OOM_KILLED.search(line):
            found.append(LogMatch("oom_killed", line.strip(), (int(match[1]),), match[2]))
        elif _CUDA_OOM.search(line):
            found.append(LogMatch("cuda_oom", line.strip()))
        elif _HOST_ALLOC.search(line):
            found.append(LogMatch("host_alloc_failed", line.strip()))
    return found
