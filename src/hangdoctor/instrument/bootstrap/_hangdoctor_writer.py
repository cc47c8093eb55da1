"""The status writer: a daemon thread that writes `status-<pid>.json` (the fields of
hangdoctor's `ProgressStatus`) atomically, at most every 0.5 s and only when something changed,
for the supervisor that polls the folder; between writes it answers the supervisor's requests
(the Flight Recorder, asyncio's tasks, its threads' system calls, its frames' objects) and keeps the thread map of the stack signal current.

It starts with the first change a process makes: a process that never counts anything (a
DataLoader worker) writes nothing."""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hangdoctor.instrument.bootstrap import _hangdoctor_files as files
    from hangdoctor.instrument.bootstrap import _hangdoctor_flight_recorder as flight_recorder
    from hangdoctor.instrument.bootstrap import _hangdoctor_kernel as kernel
    from hangdoctor.instrument.bootstrap import _hangdoctor_objects as objects
    from hangdoctor.instrument.bootstrap import _hangdoctor_protocol as protocol
    from hangdoctor.instrument.bootstrap import _hangdoctor_stacks as stacks
    from hangdoctor.instrument.bootstrap import _hangdoctor_state as shared
    from hangdoctor.instrument.bootstrap import _hangdoctor_tasks as tasks
else:
    import _hangdoctor_files as files
    import _hangdoctor_flight_recorder as flight_recorder
    import _hangdoctor_kernel as kernel
    import _hangdoctor_objects as objects
    import _hangdoctor_protocol as protocol
    import _hangdoctor_stacks as stacks
    import _hangdoctor_state as shared
    import _hangdoctor_tasks as tasks

WRITE_INTERVAL_S = 0.5
probe = shared.probe
_answering = False  # a thread answers the supervisor's requests (`start_answering`)
_status = shared.status


def changed() -> None:
    """Note a change; the first one in a process starts its writer."""
    _status.version += 1
    if not probe.writer_started:
        _start_writer()


def _start_writer() -> None:
    if probe.disabled or probe.directory is None:
        return
    probe.writer_started = True
    with contextlib.suppress(Exception):
        threading.Thread(target=_write_loop, name="hangdoctor-status", daemon=True).start()


def _write_loop() -> None:
    while not probe.disabled:
        _learn_identity()
        _count_device_losses()
        _note_own_io()
        _flush()
        flight_recorder.answer_flight_recorder_request()
        _answer()
        time.sleep(WRITE_INTERVAL_S)


def start_answering(*, forked: bool = False) -> None:
    """A forked child (a DataLoader or pool worker) counts nothing of its own, so it has no
    writer; it gets a thread that only answers the supervisor's request for its threads'
    system calls, which /proc hides from every other process where ptrace is refused, and so
    does a process that runs asyncio without torch (where its tasks wait lives only in it). It
    writes nothing else, and stops if the process starts a writer of its own."""
    global _answering
    if forked:
        _answering = False  # the parent's answering thread did not survive the fork
    if probe.disabled or probe.directory is None or _answering:
        return
    _answering = True
    with contextlib.suppress(Exception):
        threading.Thread(target=_answer_loop, name="hangdoctor-answer", daemon=True).start()


def _answer_loop() -> None:
    while not probe.disabled and not probe.writer_started:
        _answer()
        time.sleep(WRITE_INTERVAL_S)


def _answer() -> None:
    """What every instrumented process does each interval, writer or forked child alike: answer
    the supervisor's requests for its asyncio tasks, its threads' system calls and its frames'
    objects, and keep its thread map and stack dump current."""
    tasks.answer_task_request()
    kernel.answer_kernel_request()
    objects.answer_object_request()
    stacks.write_thread_map()
    stacks.keep_stack_dump()


def at_exit() -> None:
    """The last counts: GPU losses whose copy has arrived, when the process exited, then the
    status file (a rank that returns early leaves no other trace of having gone first)."""
    _count_device_losses()
    try:
        _status.exiting_at = time.time()
        changed()
    except Exception:
        pass
    _flush()


def write_now(wait_s: float = 2.0) -> None:
    """Write the status at once, from any thread: how the process ends, just before it does.
    The writer thread's lock is waited for at most `wait_s` (a signal handler may interrupt the
    very thread that holds it), then the status is written anyway."""
    if probe.disabled or probe.directory is None:
        return
    _status.version += 1
    locked = probe.write_lock.acquire(timeout=wait_s)
    try:
        files.write_atomically(protocol.status_file(_status.pid), _status.as_json())
        probe.written = _status.version
    except Exception:
        pass
    finally:
        if locked:
            probe.write_lock.release()


def _count_device_losses() -> None:
    try:
        if _status.device_losses.collect():
            changed()
    except Exception:
        pass


_IO_STEP = 64 * 1024  # the supervisor's bar for data work is 64 KiB/s; finer is noise


def _note_own_io() -> None:
    """This process's bytes written and read from storage, from its own /proc/self/io: a
    supervisor that may not read /proc/PID/io (ptrace refused) still sees a job that writes
    its shards or checkpoints at work. Noted when it moved by 64 KiB or more."""
    try:
        with open("/proc/self/io", "rb") as handle:
            fields = dict(line.split(b":", 1) for line in handle.read().splitlines() if b":" in line)
        written, read = int(fields[b"wchar"]), int(fields[b"read_bytes"])
        before = (_status.write_chars or 0) + (_status.read_bytes or 0)
        if _status.write_chars is None or written + read - before >= _IO_STEP:
            _status.write_chars, _status.read_bytes = written, read
            changed()
    except Exception:
        pass


def _learn_identity() -> None:
    """Read the rank and world size from the process group once it exists: however the job was
    launched (mp.spawn, Lightning, `--rank` on a command line), the process then knows them.
    A JAX process of a multi-process job knows them from `jax.distributed.initialize`, which
    notes them before it connects (so a process stuck there has its rank too): read from its
    state, never by calling JAX from this thread."""
    try:
        dist = probe.dist
        if _status.rank is None and dist is not None and dist.is_initialized():
            _status.rank = int(dist.get_rank())
            _status.world_size = int(dist.get_world_size())
            changed()
        state = getattr(sys.modules.get("jax._src.distributed"), "global_state", None)
        if _status.rank is None and state is not None:
            rank, size = getattr(state, "process_id", None), getattr(state, "num_processes", None)
            if type(rank) is int and type(size) is int and size > 1:
                _status.rank, _status.world_size = rank, size
                changed()
        if _status.rank is None and "tensorflow" in sys.modules:
            identity = _tf_config_identity(os.environ.get("TF_CONFIG"))
            if identity is not None:
                _status.rank, _status.world_size = identity
                changed()
    except Exception:
        pass


def _tf_config_identity(text: str | None) -> tuple[int, int] | None:
    """(rank, world size) of a TensorFlow multi-worker task from TF_CONFIG, which the job may
    set in its own environment after it started (then /proc does not show it): the chief is
    rank 0 and the workers follow it in their order."""
    if not text:
        return None
    import json

    config = json.loads(text)
    cluster, task = config.get("cluster") or {}, config.get("task") or {}
    chiefs, workers = len(cluster.get("chief") or ()), len(cluster.get("worker") or ())
    kind, index = task.get("type"), task.get("index", 0)
    if chiefs + workers < 2 or type(index) is not int or kind not in ("chief", "worker"):
        return None
    return (index if kind == "chief" else chiefs + index), chiefs + workers


def _flush() -> None:
    """Write the status if it changed since the last write (also at exit, for the last steps)."""
    if not probe.writer_started or probe.disabled or probe.directory is None:
        return
    try:
        with probe.write_lock:
            version = _status.version
            if version == probe.written:
                return
            files.write_atomically(protocol.status_file(_status.pid), _status.as_json())
            probe.written = version
    except Exception:
        probe.disabled = True  # an unwritable folder: stop trying, the job goes on

