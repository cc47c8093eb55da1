"""What the JAX and TensorFlow hooks count, in one place: a step by where it was seen, a
compilation that runs (a phase under the compile budget, so that a long healthy compile is not
declared hung), and the frameworks a process imported with their versions.

A step runs in the training loop, so it does the least that can be done (a few attribute
writes, no lock: the GIL orders them, as for a heartbeat). Every function swallows its errors:
watching the job must never break it.
"""

from __future__ import annotations

import functools
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable
    from types import ModuleType

    from hangdoctor.instrument.bootstrap import _hangdoctor_hooks as hooks
    from hangdoctor.instrument.bootstrap import _hangdoctor_state as shared
    from hangdoctor.instrument.bootstrap import _hangdoctor_writer as writer
else:
    import _hangdoctor_hooks as hooks
    import _hangdoctor_state as shared
    import _hangdoctor_writer as writer

probe = shared.probe
_status = shared.status
_now = time.time


#: How many loops that cannot end are running (`enter_endless`): their steps are no progress.
_endless_depth = [0]


def count_step(source: str) -> None:
    """One training step of a framework, counted where `source` says (`jax.jit`); inside a loop
    that cannot end, one more of its batches instead."""
    try:
        status = _status
        if _endless_depth[0]:
            loop = status.endless_loop
            if loop is not None:
                loop["batches"] = int(loop.get("batches", 0)) + 1  # type: ignore[call-overload]
            return
        status.steps += 1
        status.last_step_at = _now()
        steps = status.framework_steps
        steps[source] = steps.get(source, 0) + 1
        status.version += 1
        if not probe.writer_started:
            writer.changed()
    except Exception:
        pass


def count_batch(waited_s: float, got_batch: bool) -> None:
    """One `next()` on a framework's data iterator: the wait, and a batch if one came (else its
    data ran out)."""
    try:
        status = _status
        status.data_wait_s += waited_s
        if got_batch:
            status.batches += 1
            status.last_batch_at = _now()
        else:
            status.data_ends += 1
        status.version += 1
        if not probe.writer_started:
            writer.changed()
    except Exception:
        pass


def enter_compile(what: str) -> list[object] | None:
    """A compilation starts; returns its entry for `leave_compile` (None if it failed)."""
    try:
        entry: list[object] = [what, _now()]
        _status.compiles.append(entry)
        writer.changed()
        return entry
    except Exception:
        return None


def leave_compile(entry: list[object] | None) -> None:
    """The compilation of `entry` ended (returned or raised)."""
    if entry is None:
        return
    try:
        compiles = _status.compiles
        for index in range(len(compiles) - 1, -1, -1):
            if compiles[index] is entry:
                del compiles[index]
                break
        writer.changed()
    except Exception:
        pass


def compile_phase(original: Callable[..., object], what: str) -> Callable[..., object]:
    """`original` wrapped so that each call is a compile phase named `what` for as long as it runs,
    whoever called it (XLA compiling or fetching a computation from its cache, a tf.function
    tracing its Python code again)."""

    @functools.wraps(original)
    def compiling(*args: object, **kwargs: object) -> object:
        entry = enter_compile(what)
        try:
            return original(*args, **kwargs)
        except BaseException as error:
            hooks._hide_wrapper_frame(error)
            raise
        finally:
            leave_compile(entry)

    shared.mark_wrapper(compiling)
    return compiling


def enter_endless(what: str, why: str, site: tuple[str, int, str] | None,
                  argument: str | None = None) -> bool:
    """A loop of the framework starts that cannot end by itself (`why`), called from `site`
    (file, line, function) of the user's code, whose `argument` would have ended it; returns
    whether it was noted."""
    try:
        if not _endless_depth[0]:
            file, line, function = site if site is not None else (None, None, None)
            _status.endless_loop = {
                "what": what,
                "why": why,
                "since": _now(),
                "batches": 0,
                "site": {"file": file, "line": line, "function": function} if site else None,
                "argument": argument,
            }
        _endless_depth[0] += 1
        writer.changed()
        return True
    except Exception:
        return False


def leave_endless() -> None:
    """That loop ended after all (it raised, or was stopped)."""
    try:
        _endless_depth[0] = max(0, _endless_depth[0] - 1)
        if not _endless_depth[0]:
            _status.endless_loop = None
        writer.changed()
    except Exception:
        pass


def note_version(name: str, module: ModuleType | None) -> None:
    """Note that the process imported framework `name`, with the version its module says (read
    as a plain attribute: nothing is imported for it)."""
    if module is None:
        return
    try:
        version = getattr(module, "__version__", None)
        if not isinstance(version, str):
            version = str(version) if version is not None else "?"
        _status.frameworks[name] = version[:64]
        writer.changed()
    except Exception:
        pass


def short_name(function: object) -> str:
    """A function's name for a compile entry (`train_step`), bounded."""
    try:
        name = getattr(function, "__qualname__", None) or getattr(function, "__name__", None)
        return str(name)[:80] if name else "<function>"
    except Exception:
        return "<function>"
