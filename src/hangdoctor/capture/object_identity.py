"""The attributes of each frame's locals that the process named (`probes.job_objects`),
attached to the frames, so that `self.model_lock` in one thread and `model_lock` in another are
known to be one lock when they are (issue 27: objects have identity); with the module globals
a frame's line names (`cache.guard`), and the RLocks each thread owns."""

from __future__ import annotations

import re
from pathlib import Path

from hangdoctor.evidence.model import (
    Bundle,
    Frame,
    LocalVariable,
    OwnedLock,
    ProcessEvidence,
    Snapshot,
)
from hangdoctor.instrument.bootstrap import _hangdoctor_protocol as protocol
from hangdoctor.probes.job_objects import Globals, ObjectsAnswer, collect_objects


def _frame(frame: Frame, by_owner: dict[int, list[tuple[str, int, str]]], named: Globals) -> Frame:
    found = [
        LocalVariable(name=f"{local.name}.{name}", repr=f"<{kind} at {value:#x}>", addr=value)
        for local in frame.locals
        if local.addr is not None
        for name, value, kind in by_owner.get(local.addr, ())
    ]
    # A module's globals, where this frame's line names them and no local hides them.
    mentioned = " ".join((frame.code or "", *frame.acquiring, *(h.expression for h in frame.held)))
    local_names = {local.name for local in frame.locals}
    found += [
        LocalVariable(name=expression, repr=f"<{kind} at {value:#x}>", addr=value)
        for expression, value, kind in named.get(frame.file, ())
        if expression.partition(".")[0] not in local_names and _names(mentioned, expression)
    ]
    return frame.model_copy(update={"attributes": tuple(found)}) if found else frame


def _names(text: str, expression: str) -> bool:
    """Whether `text` uses `expression` as a whole name (`cache.guard`, not `my_cache.guard`)."""
    return re.search(rf"(?<![\w.]){re.escape(expression)}(?!\w)", text) is not None


def _process(process: ProcessEvidence, answer: ObjectsAnswer) -> ProcessEvidence:
    by_owner: dict[int, list[tuple[str, int, str]]] = {}
    for (owner, name), (value, kind) in answer.attributes.items():
        by_owner.setdefault(owner, []).append((name, value, kind))
    owned: dict[int, list[OwnedLock]] = {}
    for address, (tid, count, kind) in sorted(answer.owners.items()):
        owned.setdefault(tid, []).append(OwnedLock(addr=address, count=count, kind=kind))
    threads = []
    for thread in process.threads:
        update: dict[str, object] = {}
        if thread.tid in owned:
            update["owns"] = tuple(owned[thread.tid])
        if thread.python is not None:
            frames = tuple(_frame(f, by_owner, answer.globals) for f in thread.python.frames)
            update["python"] = thread.python.model_copy(update={"frames": frames})
        threads.append(thread.model_copy(update=update) if update else thread)
    return process.model_copy(update={"threads": tuple(threads)})


def with_object_attributes(bundle: Bundle, found: dict[int, ObjectsAnswer]) -> Bundle:
    """`bundle` with each frame's attributes that its process named, and each thread's owned
    RLocks."""
    if not found:
        return bundle

    def snapshot(s: Snapshot) -> Snapshot:
        processes = tuple(_process(p, found[p.pid]) if p.pid in found else p for p in s.processes)
        return s.model_copy(update={"processes": processes})

    return bundle.model_copy(update={"snapshots": tuple(snapshot(s) for s in bundle.snapshots)})


def _answering(bundle: Bundle, status_dir: Path) -> set[int]:
    """The captured processes that run the instrumentation (they keep a thread map)."""
    return {
        p.pid
        for s in bundle.snapshots[:1]
        for p in s.processes
        if (status_dir / protocol.thread_map_file(p.pid)).exists()
    }


def identify_objects(bundle: Bundle, status_dir: Path, asked: float) -> Bundle:
    """`bundle` with what its processes answered to the request made at `asked`."""
    found = collect_objects(status_dir, asked, _answering(bundle, status_dir))
    return with_object_attributes(bundle, found)
