"""hangdoctor's in-process probe: counts training progress and writes it to a status file.

Loaded by our `sitecustomize` once `torch`, `jax`, `tensorflow` or `keras` is imported, in the
job's own interpreter (any Python >= 3.8, hangdoctor not importable): stdlib and the job's own
frameworks only. This module arms the probe;
its parts, one job each, are the modules beside it that `protocol.PROBE_PARTS` names: the torch
hooks (`_hangdoctor_hooks`), the status writer thread (`_hangdoctor_writer`), the Flight
Recorder and asyncio tasks on request, the stacks written without ptrace (`_hangdoctor_stacks`),
and the state they share (`_hangdoctor_state`). Watching the job must never change or break it.

Invisible to the job: an exception raised through a wrapper leaves no frame of ours in the
user's traceback (Python >= 3.11), and torch.compile neither traces nor breaks its graphs on our
code (our frames are skipped when Dynamo meets them, a step counted inside a compiled region is
counted after its graph).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
import threading
import types
from typing import TYPE_CHECKING


def _sibling(name: str) -> types.ModuleType:
    """A module of this folder, loaded from beside this file (sys.path may have changed, and
    this file may run under another name)."""
    module = sys.modules.get(name)
    if module is None:
        import importlib.util

        path = os.path.join(os.path.dirname(os.path.abspath(__file__)), name + ".py")
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise ImportError(name)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        sys.modules[name] = module
    return module


if TYPE_CHECKING:
    from hangdoctor.instrument.bootstrap import _hangdoctor_frameworks as frameworks
    from hangdoctor.instrument.bootstrap import _hangdoctor_hooks as hooks
    from hangdoctor.instrument.bootstrap import _hangdoctor_jax as jax_hooks
    from hangdoctor.instrument.bootstrap import _hangdoctor_losses as losses
    from hangdoctor.instrument.bootstrap import _hangdoctor_protocol as protocol
    from hangdoctor.instrument.bootstrap import _hangdoctor_stacks as stacks
    from hangdoctor.instrument.bootstrap import _hangdoctor_state as shared
    from hangdoctor.instrument.bootstrap import _hangdoctor_tf as tf_hooks
    from hangdoctor.instrument.bootstrap import _hangdoctor_writer as writer
else:
    protocol = _sibling("_hangdoctor_protocol")
    for _part in protocol.PROBE_PARTS:  # in order: each imports only those before it,
        _sibling(_part)  # found in sys.modules by then
    hooks = sys.modules["_hangdoctor_hooks"]
    frameworks = sys.modules["_hangdoctor_frameworks"]
    jax_hooks = sys.modules["_hangdoctor_jax"]
    losses = sys.modules["_hangdoctor_losses"]
    tf_hooks = sys.modules["_hangdoctor_tf"]
    shared = sys.modules["_hangdoctor_state"]
    stacks = sys.modules["_hangdoctor_stacks"]
    writer = sys.modules["_hangdoctor_writer"]

STATUS_DIR_ENV = protocol.STATUS_DIR_ENV
probe = shared.probe
_armed = False  # reporting: the status folder, the stacks, the writer
_hooked = False  # the torch hooks are in


def arm() -> None:
    """Start reporting, and install the hooks into torch once it is imported. Idempotent: the
    SDK arms a process that has no torch (a JAX loop calling `hangdoctor.heartbeat`), and
    `sitecustomize` calls it again when torch arrives."""
    global _armed, _hooked
    directory = os.environ.get(STATUS_DIR_ENV)
    if not directory:
        return
    torch = sys.modules.get("torch")
    if not _armed:
        _armed = True
        probe.directory = os.path.abspath(directory)
        stacks.log_fatal_signals()
        stacks.log_stop_signal()
        stacks.log_thread_deaths()
        stacks.log_uncaught_exception()
        stacks.log_process_ends()
        stacks.log_exit_calls()
        stacks.register_stack_dump()
        with contextlib.suppress(Exception):
            os.register_at_fork(after_in_child=_after_fork_in_child)
            atexit.register(writer.at_exit)
    if torch is not None and not _hooked:
        _hooked = True
        frameworks.note_version("torch", torch)
        probe.compiling = getattr(getattr(torch, "compiler", None), "is_compiling", None)
        for install in (hooks.hook_optimizer, hooks.hook_dataloader, hooks.hook_distributed,
                        hooks.hook_backward, losses.hook_loss_functions,
                        stacks.keep_fatal_signals_in_loader_workers):
            with contextlib.suppress(Exception):
                install(torch)
        if "torch._dynamo" in sys.modules:
            dynamo_loaded()
    with contextlib.suppress(Exception):
        writer.changed()  # write once now: the supervisor sees which processes are instrumented


def _in_status_folder() -> bool:
    """Whether `run` gave the job a status folder (the probe then writes there)."""
    directory = os.environ.get(STATUS_DIR_ENV)
    if not directory:
        return False
    if probe.directory is None:
        probe.directory = os.path.abspath(directory)
    return True


def framework_loaded(name: str) -> None:
    """A framework other than torch finished importing (`sitecustomize` watches for them):
    start reporting, then count its steps (`_hangdoctor_jax`, `_hangdoctor_tf`). Each
    framework's hooks go in once; a failing one leaves the others and the job alone."""
    if not os.environ.get(STATUS_DIR_ENV) or name in _frameworks_hooked:
        return
    _frameworks_hooked.add(name)
    arm()
    module = sys.modules.get(name)
    with contextlib.suppress(Exception):
        if name == "jax" and module is not None:
            jax_hooks.hook_jax(module)
        elif name == "optax" and module is not None:
            jax_hooks.hook_optax(module)
        elif name in ("orbax.checkpoint", "flax.training.checkpoints"):
            jax_hooks.hook_checkpoints(name)
        elif name == "tensorflow" and module is not None:
            tf_hooks.hook_tensorflow(module)
        elif name in tf_hooks.KERAS_CALLBACK_LISTS:
            tf_hooks.hook_keras(name)


_frameworks_hooked: set[str] = set()


def watch_process_ends() -> None:
    """Note the processes the job ends with terminate() or kill(): cheap (a wrapper on two
    methods), so it is done in every process that imports multiprocessing, torch or not."""
    if _in_status_folder():
        stacks.log_process_ends()


def watch_offloop_calls() -> None:
    """Note where the job schedules asyncio work from a thread other than the loop's: cheap (a
    thread-id comparison per `call_soon`), in every process that imports asyncio."""
    if _in_status_folder():
        stacks.log_offloop_calls()
        writer.start_answering()  # its tasks' awaits, asked for at a hang


def dynamo_loaded() -> None:
    """torch._dynamo was just imported (torch.compile): keep the compiler off our code.

    Dynamo compiles every Python frame that runs while a compiled function executes, so our
    wrappers, met after a graph break (`loss.backward()` is one), would be traced and our own
    `.item()` would break a graph of ours and warn. Every code object of the probe's modules is
    marked to be skipped: it then runs as plain Python. A step counted while Dynamo traces an
    optimizer step is deferred to after the graph (a reorderable call), not a graph break.
    """
    try:
        eval_frame = sys.modules.get("torch._dynamo.eval_frame")
        skip = getattr(eval_frame, "skip_code", None)
        if skip is not None:
            for code in _own_code():
                skip(code)
        config = sys.modules.get("torch._dynamo.config")
        reorderable = getattr(config, "reorderable_logging_functions", None)
        if isinstance(reorderable, set):
            reorderable.add(hooks.count_step)
    except Exception:
        pass


def _own_code() -> list[types.CodeType]:
    """Every code object defined in the probe's modules, nested functions included."""
    found: list[types.CodeType] = []
    pending: list[types.CodeType] = []
    parts = [sys.modules.get(name) for name in protocol.PROBE_PARTS]
    for namespace in (globals(), *(vars(part) for part in parts if part is not None)):
        name = namespace["__name__"]
        members = list(namespace.values())
        pending += [value.__code__ for value in members
                    if isinstance(value, types.FunctionType) and value.__module__ == name]
        for value in members:
            if isinstance(value, type) and value.__module__ == name:
                pending += [member.__code__ for member in vars(value).values()
                            if isinstance(member, types.FunctionType)]
    while pending:
        code = pending.pop()
        found.append(code)
        pending += [c for c in code.co_consts if isinstance(c, types.CodeType)]
    return found


def _after_fork_in_child() -> None:
    """A forked child (a DataLoader worker) reports for itself, from zero, and only if it makes
    progress of its own; the parent's writer thread and lock state did not survive the fork.
    Until then a thread of its own answers the supervisor's request for its kernel state."""
    try:
        probe.tls = threading.local()
        probe.write_lock = threading.Lock()
        probe.writer_started = False
        shared.status.reset()
        probe.written = shared.status.version
        stacks.log_fatal_signals()  # a file of its own: a worker's crash is the worker's
        stacks.log_stop_signal()
    except Exception:
        pass
    stacks.register_stack_dump()
    writer.start_answering(forked=True)
