"""Facts for the checks' examples and tests: a healthy CPU node, changed a few fields at a time.

`node(limits={"somaxconn": 128})` is the healthy node with one limit changed; a section given as
a model (`gpus=Gpus(...)`) replaces that section whole. The result is validated like any facts
read back from JSON, so an example cannot name a field that does not exist.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from hangdoctor.doctor.facts import (
    Distributed,
    Facts,
    Gpus,
    KernelLog,
    Libraries,
    Limits,
    Versions,
)
from hangdoctor.doctor.units import GIB

#: What a healthy CPU node reports: nothing any check warns about.
HEALTHY = Facts(
    hostname="node-1",
    versions=Versions(python="3.11.7", torch="2.13.0"),
    limits=Limits(
        max_map_count=262144,
        somaxconn=4096,
        nofile_soft=65536,
        nofile_hard=65536,
        memlock_soft=-1,
        memlock_hard=-1,
        shm_total_bytes=32 * GIB,
        shm_free_bytes=32 * GIB,
        swap_total_bytes=0,
        swap_used_bytes=0,
        is_root=True,
        cap_sys_ptrace=True,
        ptrace_scope=0,
        py_spy="/usr/bin/py-spy",
    ),
    kernel_log=KernelLog(source="dmesg", window="24h", lines=("Linux version 6.1.0",)),
    libraries=Libraries(glibc="2.36"),
    gpus=Gpus(),
    distributed=Distributed(),
)


def node(**changes: object) -> Facts:
    """The healthy node with `changes`: a mapping updates the fields of that section, anything
    else (a model, a number, a tuple) replaces it."""
    data: dict[str, Any] = HEALTHY.model_dump()
    for name, value in changes.items():
        current = data.get(name)
        if isinstance(value, Mapping) and isinstance(current, dict):
            data[name] = {**current, **value}
        elif isinstance(value, BaseModel):
            data[name] = value.model_dump()
        else:
            data[name] = value
    return Facts.model_validate(data)
