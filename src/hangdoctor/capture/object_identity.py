"""The attributes of each frame's locals that the process named (`probes.job_objects`),
attached to the frames, so that `self.model_lock` in one thread and `model_lock` in another are
known to be one lock when they are (issue 27: objects have identity)."""

from __future__ import annotations

from pathlib import Path

from hangdoctor.evidence.model import Bundle, Frame, LocalVariable, ProcessEvidence, Snapshot
from hangdoctor.instrument.bootstrap import _hangdoctor_protocol as protocol
from hangdoctor.probes.job_objects import Attributes, collect_objects


def _frame(frame: Frame, by_owner: dict[int, list[tuple[str, int, str]]]) -> Frame:
    found = tuple(
        LocalVariable(name=f"{local.name}.{name}", repr=f"<{kind} at {value:#x}>", addr=value)
        for local in frame.locals
        if local.addr is not None
        for name, value, kind in by_owner.get(local.addr, ())
    )
    return frame.model_copy(update={"attributes": found}) if found else frame


def _process(process: ProcessEvidence, attributes: Attributes) -> ProcessEvidence:
    by_owner: dict[int, list[tuple[str, int, str]]] = {}
    for (owner, name), (value, kind) in attributes.items():
        by_owner.setdefault(owner, []).append((name, value, kind))
    threads = []
    for thread in process.threads:
        if thread.python is None:
            threads.append(thread)
            continue
        frames = tuple(_frame(f, by_owner) for f in thread.python.frames)
        python = thread.python.model_copy(update={"frames": frames})
        threads.append(thread.model_copy(update={"python": python}))
    return process.model_copy(update={"threads": tuple(threads)})


def with_object_attributes(bundle: Bundle, found: dict[int, Attributes]) -> Bundle:
    """`bundle` with each frame's attributes that its process named."""
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
