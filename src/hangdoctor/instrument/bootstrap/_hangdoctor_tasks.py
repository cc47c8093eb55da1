"""asyncio's tasks, on request: where each task of an event loop is suspended, and which
ended with an exception nobody retrieved, which only the process itself can tell."""

from __future__ import annotations

import json
import os
import sys
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
_answered_tasks: int | None = None
_MAX_TASKS = 64
_MAX_DEPTH = 24


def answer_task_request() -> None:
    """At a hang, an asyncio program's stack says only that its event loop waits in the
    selector: where each task is suspended (`await queue.get()`) and which tasks ended with an
    exception nobody retrieved live only in the process. On the supervisor's request (the same
    file as the Flight Recorder's), when a thread runs an event loop, they are written to
    `tasks-<pid>.json`. Read only: a task's exception is read from its attribute, not
    `exception()`, which would mark it retrieved and silence asyncio's own report of it."""
    global _answered_tasks
    if probe.directory is None or "asyncio" not in sys.modules:
        return
    try:
        stamp = files.request_stamp()
        if stamp in (None, _answered_tasks):
            return
        _answered_tasks = stamp
        if not _runs_event_loop():
            return
        import gc

        future_type = sys.modules["asyncio"].Task
        tasks = [o for o in gc.get_objects() if isinstance(o, future_type)]
        pending = [t for t in tasks if not t.done()]
        failed = [t for t in tasks if t.done() and not t.cancelled()
                  and getattr(t, "_exception", None) is not None]
        body = json.dumps({"pid": os.getpid(), "tasks": [
            _task_json(t) for t in (pending[:_MAX_TASKS] + failed[:_MAX_TASKS])]})
        files.write_atomically(protocol.tasks_file(os.getpid()), body)
    except Exception:
        pass


def _runs_event_loop() -> bool:
    """Whether some thread is inside an asyncio event loop's run_forever."""
    for frame in sys._current_frames().values():
        depth: FrameType | None = frame
        for _ in range(64):
            if depth is None:
                break
            code = depth.f_code
            if code.co_name == "run_forever" and code.co_filename.replace(
                    "\\", "/").endswith("asyncio/base_events.py"):
                return True
            depth = depth.f_back
    return False


def _task_json(task: Any) -> dict[str, object]:
    """A task's name, state, where it awaits (innermost first) or what it raised."""
    entry: dict[str, object] = {"name": str(task.get_name()), "done": bool(task.done())}
    if not task.done():
        chain: list[list[object]] = []
        awaited = task.get_coro()
        for _ in range(_MAX_DEPTH):
            if awaited is None:
                break
            frame = getattr(awaited, "cr_frame", None) or getattr(awaited, "gi_frame", None)
            if frame is not None:
                code = frame.f_code
                chain.append([code.co_filename, frame.f_lineno,
                              getattr(code, "co_qualname", code.co_name)])
            awaited = (getattr(awaited, "cr_await", None)
                       or getattr(awaited, "gi_yieldfrom", None))
        entry["awaiting"] = chain[::-1]
        return entry
    error = task._exception
    import traceback

    entry["exception"] = f"{type(error).__name__}: {error}"[:500]
    entry["retrieved"] = not bool(getattr(task, "_log_traceback", False))
    entry["raised"] = [[f.filename, f.lineno, f.name, f.line or ""]
                       for f in traceback.extract_tb(error.__traceback__)][::-1][:_MAX_DEPTH]
    return entry

