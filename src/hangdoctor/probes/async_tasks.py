"""asyncio's tasks, as the instrumentation wrote them at a hang (`tasks-<pid>.json`).

An event loop waiting in its selector shows nothing of its coroutines to py-spy: a suspended
coroutine has no thread. The instrumentation's writer thread reads every task of the process
(pending ones: their await chain; finished ones: the exception they ended with) when the
supervisor asks for the Flight Recorder, and this module reads what it wrote."""

from __future__ import annotations

import json
import time
from pathlib import Path

from hangdoctor.analysis.frames import in_function
from hangdoctor.evidence.model import AsyncTask, Bundle, Frame
from hangdoctor.instrument.bootstrap import _hangdoctor_protocol as protocol
from hangdoctor.probes.sources import with_source
from hangdoctor.redact import redact_value

_GLOB = protocol.glob_of(protocol.TASKS_PREFIX, protocol.TASKS_SUFFIX)
_MAX_BYTES = 1024 * 1024


def _frames(raw: object) -> tuple[Frame, ...]:
    """[[file, line, function, (code)], ...] as frames, their source read where it exists."""
    frames = []
    for item in raw if isinstance(raw, list) else []:
        if not (isinstance(item, list) and len(item) >= 3 and isinstance(item[1], int)):
            continue
        frame = Frame(
            file=str(item[0]),
            line=item[1],
            function=str(item[2]),
            code=str(item[3]).strip() or None if len(item) > 3 else None,
        )
        frames.append(with_source(frame) if frame.code is None else frame)
    return tuple(frames)


def parse_tasks(text: str) -> list[AsyncTask]:
    """One `tasks-<pid>.json`; nothing when it is unusable."""
    try:
        data = json.loads(text)
        pid = int(data["pid"])
        return [
            AsyncTask(
                pid=pid,
                name=str(raw.get("name", "")),
                done=bool(raw.get("done")),
                awaiting=_frames(raw.get("awaiting")),
                exception=(
                    redact_value(str(raw["exception"]))
                    if raw.get("exception") is not None
                    else None
                ),
                raised=_frames(raw.get("raised")),
                retrieved=(bool(raw["retrieved"]) if "retrieved" in raw else None),
            )
            for raw in data["tasks"]
            if isinstance(raw, dict)
        ]
    except (ValueError, KeyError, TypeError, AttributeError, OverflowError):
        return []


def read_tasks(status_dir: Path, since: float) -> tuple[AsyncTask, ...]:
    """The tasks written after `since` (the request's time), every process's."""
    found: list[AsyncTask] = []
    try:
        paths = sorted(status_dir.glob(_GLOB))
    except OSError:
        return ()
    for path in paths:
        try:
            if path.stat().st_mtime < since or path.stat().st_size > _MAX_BYTES:
                continue
            found += parse_tasks(path.read_text(errors="replace"))
        except OSError:
            continue
    return tuple(found)


def runs_event_loop(bundle: Bundle) -> bool:
    """Whether a captured thread is inside an asyncio event loop."""
    return any(
        in_function(
            thread.python.frames if thread.python else (), "asyncio/base_events.py", {"run_forever"}
        )
        for snapshot in bundle.snapshots[:1]
        for process in snapshot.processes
        for thread in process.threads
    )


def collect_tasks(
    status_dir: Path, since: float, bundle: Bundle, timeout_s: float = 1.5
) -> tuple[AsyncTask, ...]:
    """The tasks the processes wrote after `since`; where a captured thread runs an event loop
    and nothing is written yet, waits up to `timeout_s` (the writer looks twice a second)."""
    deadline = time.monotonic() + (timeout_s if runs_event_loop(bundle) else 0.0)
    while True:
        found = read_tasks(status_dir, since)
        if found or time.monotonic() >= deadline:
            return found
        time.sleep(0.1)
