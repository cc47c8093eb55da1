"""Which object `self.lock` is, and which thread owns each RLock, on request (issue 27:
objects have identity).

py-spy shows the address of each local (`model_lock`, `self`), never of an attribute: a thread
in `with self.model_lock:` and another in `with model_lock:` may hold and want one lock, and
only the process itself can say so. When the supervisor asks (the request file of the Flight
Recorder at a capture, its own at a look for a proof), the writer thread lists, for the locals of every thread's frames, their attributes
that are synchronisation objects (locks, conditions, events, semaphores, barriers, queues,
futures, threads, pipes), as `[owner address, attribute, value address, type]`, into
`objects-<pid>.json`. An RLock records its owner (a plain Lock does not): for each RLock
among them, `[address, owner's kernel thread id, count, type]`, from the C lock's own repr
(no Python code of the job runs) or the Python one's `_owner`. Read only: an instance's
`__dict__` is read only where the class keeps it the ordinary way (no property runs, no
`__getattr__`), and nothing else is called on a value.
"""

from __future__ import annotations

import json
import os
import re
import sys
import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from types import FrameType

    from hangdoctor.instrument.bootstrap import _hangdoctor_files as files
    from hangdoctor.instrument.bootstrap import _hangdoctor_protocol as protocol
    from hangdoctor.instrument.bootstrap import _hangdoctor_state as shared
else:
    import _hangdoctor_files as files
    import _hangdoctor_protocol as protocol
    import _hangdoctor_state as shared

probe = shared.probe
_answered = None  # type: int | None
_MAX_DEPTH = 64  # frames per thread
_MAX_ENTRIES = 2048
#: Modules whose classes are objects a thread waits on (their own module, not a subclass's).
_SYNC_MODULES = frozenset({
    "_thread", "threading", "queue", "_queue", "multiprocessing.synchronize",
    "multiprocessing.queues", "multiprocessing.connection", "multiprocessing.pool",
    "multiprocessing.managers", "concurrent.futures._base", "concurrent.futures.thread",
    "concurrent.futures.process", "asyncio.locks", "asyncio.queues", "asyncio.futures",
    "subprocess",
})


def answer_object_request() -> None:
    """Write the synchronisation objects the locals of every thread's frames hold as
    attributes, the modules' global ones, and the owners of RLocks among them, once per
    request."""
    global _answered
    if probe.directory is None:
        return
    try:
        # the capture's request (every answer) or a proof's look (this one alone)
        stamps = [files.request_stamp(), files.request_stamp(protocol.OBJECTS_REQUEST_FILE)]
        stamp = max((s for s in stamps if s is not None), default=None)
        if stamp in (None, _answered):
            return
        _answered = stamp
        entries = []  # type: list[list[object]]
        owners = []  # type: list[list[object]]
        named = []  # type: list[list[object]]
        seen = set()  # type: set[int]
        modules = set()  # type: set[int]
        for top in list(sys._current_frames().values()):
            for frame in _outward(top):
                if (
                    id(frame.f_globals) not in modules
                    and len(named) < _MAX_ENTRIES
                    and not _library(frame.f_code.co_filename)
                ):
                    modules.add(id(frame.f_globals))
                    said, values = _global_objects(frame.f_code.co_filename, frame.f_globals)
                    named += said
                    owners += _owners(values)
                if frame.f_locals is frame.f_globals:
                    continue  # a module's own frame: its names are its globals, said above
                for value in list(frame.f_locals.values()):
                    if id(value) not in seen and len(entries) < _MAX_ENTRIES:
                        seen.add(id(value))
                        found = _sync_attributes(value)
                        entries += found
                        owners += _owners([value, *_values_of(found, value)])
        body = json.dumps({
            "pid": os.getpid(),
            "attributes": entries[:_MAX_ENTRIES],
            "owners": _once_each(owners)[:_MAX_ENTRIES],
            "globals": named[:_MAX_ENTRIES],
        })
        files.write_atomically(protocol.objects_file(os.getpid()), body)
    except Exception:
        pass


def _once_each(owners: list[list[object]]) -> list[list[object]]:
    """One entry per RLock: a lock named by a module's global and by a local's attribute is
    met twice on the way."""
    seen = set()  # type: set[object]
    kept = []  # type: list[list[object]]
    for entry in owners:
        if entry[0] not in seen:
            seen.add(entry[0])
            kept.append(entry)
    return kept


def _outward(frame: FrameType) -> list[FrameType]:
    """A thread's frames from the innermost out, at most `_MAX_DEPTH`."""
    frames: list[FrameType] = []
    current: FrameType | None = frame
    while current is not None and len(frames) < _MAX_DEPTH:
        frames.append(current)
        current = current.f_back
    return frames


def _sync_type(value: Any) -> str | None:
    """`module.Class` of a synchronisation object, else None."""
    kind = type(value)
    for klass in kind.__mro__:
        if getattr(klass, "__module__", None) in _SYNC_MODULES:
            return f"{kind.__module__}.{kind.__qualname__}"
    return None


def _plain_dict(value: Any) -> dict[str, Any] | None:
    """An instance's `__dict__` where the class keeps it the ordinary way, else None."""
    kind = type(value)
    for klass in kind.__mro__:
        descriptor = klass.__dict__.get("__dict__")
        if descriptor is not None:
            if type(descriptor).__name__ != "getset_descriptor":
                return None
            found = descriptor.__get__(value, kind)
            return found if type(found) is dict else None
    return None


def _sync_attributes(value: Any) -> list[list[object]]:
    # type() runs no code of the object's; isinstance() may (a __class__ that warns or raises)
    if issubclass(type(value), type) or type(value).__module__ in ("builtins", "types"):
        return []
    attributes = _plain_dict(value)
    if not attributes:
        return []
    found = []  # type: list[list[object]]
    for name, item in list(attributes.items())[:256]:
        if isinstance(name, str):
            kind = _sync_type(item)
            if kind is not None:
                found.append([id(value), name, id(item), kind])
    return found


_RLOCK_REPR = re.compile(r"owner=(-?\d+) count=(\d+)")


def _values_of(found: list[list[object]], owner: Any) -> list[Any]:
    """The attribute values `found` names, read again from the owner's plain dictionary."""
    attributes = _plain_dict(owner) or {}
    names = {entry[1] for entry in found}
    return [value for name, value in list(attributes.items()) if name in names]


def _owners(values: list[Any]) -> list[list[object]]:
    """`[address, kernel thread id, count, type]` of each owned RLock among `values`."""
    found = []  # type: list[list[object]]
    for value in values:
        kind = type(value)
        if kind.__name__ not in ("RLock", "_RLock") or kind.__module__ not in ("_thread", "threading"):
            continue
        ident = None  # type: object
        count = 0  # type: object
        if kind.__module__ == "_thread":
            match = _RLOCK_REPR.search(repr(value))  # C: no Python code runs
            if match is None:
                continue
            ident, count = int(match.group(1)), int(match.group(2))
        else:
            state = _plain_dict(value) or {}
            ident, count = state.get("_owner"), state.get("_count", 0)
        active = getattr(threading, "_active", {})  # ident -> Thread
        thread = active.get(ident) if isinstance(ident, int) else None
        native = getattr(thread, "native_id", None) if thread is not None else None
        if not isinstance(count, int) or count < 1 or not isinstance(native, int):
            continue
        found.append([id(value), native, int(count), kind.__module__ + "." + kind.__qualname__])
    return found


def _global_objects(file: str, namespace: dict[str, Any]) -> tuple[list[list[object]], list[Any]]:
    """`[file, expression, address, type]` of a module's global synchronisation objects and of
    those its globals hold as attributes (`cache.guard`), and the objects themselves: py-spy
    shows a function's locals, never a module's globals, so a module's names are said here, by
    the file of its code."""
    found = []  # type: list[list[object]]
    values = []  # type: list[Any]
    for name, value in list(namespace.items())[:512]:
        if not isinstance(name, str) or name.startswith("__"):
            continue
        kind = _sync_type(value)
        if kind is not None:
            found.append([file, name, id(value), kind])
            values.append(value)
            continue
        attributes = _sync_attributes(value)
        for _, attribute, address, attribute_kind in attributes:
            found.append([file, name + "." + str(attribute), address, attribute_kind])
        values += _values_of(attributes, value)
    return found, values


_LIBRARY_PARTS = ("site-packages", "dist-packages")


def _library(file: str) -> bool:
    """Whether `file` is the standard library's or an installed package's: their module globals
    are not the job's objects, and reading them could run a library's own code (a deprecated
    global that warns when touched)."""
    if file.startswith("<") or any(part in file for part in _LIBRARY_PARTS):
        return True
    prefixes = {sys.base_prefix, sys.prefix, getattr(sys, "base_exec_prefix", sys.base_prefix)}
    return any(file.startswith(os.path.join(prefix, "lib")) for prefix in prefixes)
