"""Which object an attribute is, as the job's processes wrote it at a request
(`objects-<pid>.json`, `_hangdoctor_objects`): py-spy shows the address of `self`, never of
`self.lock`, and one lock reached as `self.lock` in one thread and as a local in another is one
object only the process can say it is; and which thread owns each RLock among them."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path

from hangdoctor.instrument.bootstrap import _hangdoctor_protocol as protocol
from hangdoctor.private_files import write_text

_GLOB = protocol.glob_of(protocol.OBJECTS_PREFIX, protocol.OBJECTS_SUFFIX)
_MAX_BYTES = 4 * 1024 * 1024

#: (owner's address, attribute name) -> (the value's address, its type), per pid.
Attributes = dict[tuple[int, str], tuple[int, str]]
#: An owned RLock's address -> (its owner's kernel thread id, count, type).
Owners = dict[int, tuple[int, int, str]]
#: A module's file -> [(expression, the object's address, its type)] of its global ones.
Globals = dict[str, list[tuple[str, int, str]]]


@dataclass(frozen=True)
class ObjectsAnswer:
    """What one process said of its frames' objects."""

    attributes: Attributes
    owners: Owners = field(default_factory=dict)
    globals: Globals = field(default_factory=dict)


def request_objects(status_dir: Path) -> float:
    """Ask the instrumented processes for their frames' objects alone (a look for a proof:
    nothing else they would answer, which costs them work); returns the request's time."""
    path = status_dir / protocol.OBJECTS_REQUEST_FILE
    write_text(path, str(time.time()))
    return path.stat().st_mtime


def parse_objects(text: str) -> tuple[int, ObjectsAnswer] | None:
    """One `objects-<pid>.json`; None when it is unusable."""
    try:
        data = json.loads(text)
        pid = int(data["pid"])
        found: Attributes = {}
        for item in data["attributes"]:
            owner, name, value, kind = item
            if isinstance(name, str) and isinstance(kind, str):
                found[(int(owner), name)] = (int(value), kind)
        owners: Owners = {}
        for item in data.get("owners", ()):
            address, tid, count, kind = item
            if isinstance(kind, str):
                owners[int(address)] = (int(tid), int(count), kind)
        named: Globals = {}
        for item in data.get("globals", ()):
            file, expression, address, kind = item
            if isinstance(file, str) and isinstance(expression, str) and isinstance(kind, str):
                named.setdefault(file, []).append((expression, int(address), kind))
    except (ValueError, KeyError, TypeError, AttributeError, OverflowError):
        return None
    return pid, ObjectsAnswer(found, owners, named)


def read_objects(status_dir: Path, since: float) -> dict[int, ObjectsAnswer]:
    """What every process wrote after `since` (the request's time), by pid."""
    found: dict[int, ObjectsAnswer] = {}
    try:
        paths = sorted(status_dir.glob(_GLOB))
    except OSError:
        return found
    for path in paths:
        try:
            if path.stat().st_mtime < since or path.stat().st_size > _MAX_BYTES:
                continue
            parsed = parse_objects(path.read_text(errors="replace"))
        except OSError:
            continue
        if parsed is not None:
            found[parsed[0]] = parsed[1]
    return found


def collect_objects(
    status_dir: Path, since: float, pids: set[int], timeout_s: float = 1.0
) -> dict[int, ObjectsAnswer]:
    """What the processes `pids` wrote after `since`, waiting up to `timeout_s` for those that
    have not answered yet (the writer looks twice a second; a process without one never
    answers)."""
    deadline = time.monotonic() + timeout_s
    while True:
        found = read_objects(status_dir, since)
        if pids <= found.keys() or time.monotonic() >= deadline:
            return found
        time.sleep(0.1)
