"""Facts built by hand for the pure checks: a healthy node, changed one field at a time."""

from __future__ import annotations

from typing import Any

from hangdoctor.doctor.facts import (
    Distributed,
    Facts,
    Gpus,
    KernelLog,
    Libraries,
    Limits,
    Versions,
)
from hangdoctor.doctor.result import CheckResult

GIB = 1024**3


def make_facts(**parts: Any) -> Facts:
    """A healthy CPU node; `parts` replace whole sections (versions=Versions(...), ...)."""
    base: dict[str, Any] = {
        "hostname": "node-1",
        "versions": Versions(python="3.11.7", torch="2.13.0"),
        "limits": Limits(max_map_count=262144, somaxconn=4096, nofile_soft=65536,
                         nofile_hard=65536, memlock_soft=-1, memlock_hard=-1,
                         shm_total_bytes=32 * GIB, shm_free_bytes=32 * GIB,
                         swap_total_bytes=0, swap_used_bytes=0, is_root=True,
                         cap_sys_ptrace=True, ptrace_scope=0, py_spy="/usr/bin/py-spy"),
        "kernel_log": KernelLog(source="dmesg", window="24h", lines=("boot",)),
        "libraries": Libraries(glibc="2.36"),
        "gpus": Gpus(),
        "distributed": Distributed(),
    }
    base.update(parts)
    return Facts(**base)


def by_id(results: list[CheckResult], id: str) -> list[CheckResult]:
    """The results of one check."""
    return [r for r in results if r.id == id]


def one(results: list[CheckResult], id: str) -> CheckResult:
    """The only result of one check."""
    found = by_id(results, id)
    assert len(found) == 1, f"{id}: {found}"
    return found[0]
