"""The JAX hooks: a step per dispatch of a jitted function (and the scalars it returns, read as
losses once ready: `_hangdoctor_step_losses`), per optax update and per Orbax or
Flax checkpoint save; a compile phase while a jitted function runs for the first time (tracing,
lowering and XLA's compile) and while XLA compiles again (new shapes, pmap).

`jax.jit` returns a C++ object whose `__call__` cannot be wrapped, so `jax.jit` itself is
replaced, once jax is imported, by a function that wraps what it returns. jax's own jitted
functions (jax.numpy's, jax.nn's) were made during `import jax`, before that: they are not
steps. A jitted function called while another is traced (nested jits) passes straight through.
The wrapper is a plain function, so a jitted method still binds `self`; `lower`, `trace`,
`eval_shape` and the cache methods are the jitted object's own.
"""

from __future__ import annotations

import functools
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable
    from types import ModuleType

    from typing_extensions import TypeGuard

    from hangdoctor.instrument.bootstrap import _hangdoctor_frameworks as frameworks
    from hangdoctor.instrument.bootstrap import _hangdoctor_hooks as hooks
    from hangdoctor.instrument.bootstrap import _hangdoctor_state as shared
    from hangdoctor.instrument.bootstrap import _hangdoctor_step_losses as step_losses
    from hangdoctor.instrument.bootstrap import _hangdoctor_writer as writer
else:
    import _hangdoctor_frameworks as frameworks
    import _hangdoctor_hooks as hooks
    import _hangdoctor_state as shared
    import _hangdoctor_step_losses as step_losses
    import _hangdoctor_writer as writer

probe = shared.probe
_count_step = frameworks.count_step
#: What a jitted object offers besides being called, copied onto its wrapper.
_JITTED_ATTRIBUTES = ("lower", "trace", "eval_shape", "clear_cache", "_cache_size",
                      "_clear_cache", "_fun", "_jit_info", "_cache_miss")


def hook_jax(jax: ModuleType) -> None:
    """Wrap `jax.jit` and XLA's compile; note the versions."""
    frameworks.note_version("jax", jax)
    frameworks.note_version("jaxlib", sys.modules.get("jaxlib"))
    original = getattr(jax, "jit", None)
    if original is not None and not shared.is_wrapper(original):
        setattr(jax, "jit", _wrap_jit(original))  # noqa: B010 -- any module that is jax
    distributed = getattr(jax, "distributed", None)
    initialize = getattr(distributed, "initialize", None)
    if initialize is not None and not shared.is_wrapper(initialize):
        setattr(distributed, "initialize", _wrap_initialize(initialize))  # noqa: B010
    compiler = sys.modules.get("jax._src.compiler")
    compile_function = getattr(compiler, "compile_or_get_cached", None)
    if compile_function is not None and not shared.is_wrapper(compile_function):
        compiler.compile_or_get_cached = frameworks.compile_phase(  # type: ignore[union-attr]
            compile_function, "xla compile"
        )


def _is_jitted(made: object) -> TypeGuard[Callable[..., object]]:
    """Whether `made` is what `jax.jit(f)` returns (and not its decorator factory)."""
    return hasattr(made, "lower") and hasattr(made, "_cache_size")


def _wrap_jit(original: Callable[..., object]) -> Callable[..., object]:
    @functools.wraps(original)
    def jit(*args: object, **kwargs: object) -> object:
        return _wrap_made(original(*args, **kwargs))

    shared.mark_wrapper(jit)
    return jit


def _wrap_made(made: object) -> object:
    """A jitted function's wrapper; for `jax.jit(static_argnames=...)` (no function yet), a
    decorator that wraps what it makes."""
    try:
        if _is_jitted(made):
            return _wrap_jitted(made)
        if callable(made):
            decorator = made

            @functools.wraps(decorator)
            def jit_decorator(*args: object, **kwargs: object) -> object:
                return _wrap_made(decorator(*args, **kwargs))

            shared.mark_wrapper(jit_decorator)
            return jit_decorator
    except Exception:
        pass
    return made


def _wrap_jitted(jitted: Callable[..., object]) -> Callable[..., object]:
    name = frameworks.short_name(getattr(jitted, "__wrapped__", jitted))
    first = [True]  # its first call traces and compiles
    status, now = shared.status, frameworks._now

    def jitted_call(*args: object, **kwargs: object) -> object:
        tls = probe.tls
        if getattr(tls, "in_jax", False):  # called while another jitted function is traced
            return jitted(*args, **kwargs)
        entry = None
        if first[0]:
            first[0] = False
            entry = frameworks.enter_compile("jax.jit " + name)
        tls.in_jax = True
        try:
            result = jitted(*args, **kwargs)
        except BaseException as error:
            hooks._hide_wrapper_frame(error)
            raise
        finally:
            tls.in_jax = False
            if entry is not None:
                frameworks.leave_compile(entry)
        try:  # a step, counted inline (`frameworks.count_step`): this runs at every dispatch
            status.steps += 1
            status.last_step_at = at = now()
            steps = status.framework_steps
            steps["jax.jit"] = steps.get("jax.jit", 0) + 1
            if at >= step_losses.next_look_at[0]:
                step_losses.note_outputs(result, at)
            status.version += 1
            if not probe.writer_started:
                writer.changed()
        except Exception:
            pass
        return result

    try:
        functools.update_wrapper(jitted_call, jitted)
        for attribute in _JITTED_ATTRIBUTES:
            value = getattr(jitted, attribute, None)
            if value is not None:
                setattr(jitted_call, attribute, value)
        # `__wrapped__` stays what jax made it (the user's function); jax's own object is kept
        # apart, for a benchmark that times it against this wrapper
        jitted_call.__wrapped__ = getattr(jitted, "__wrapped__", jitted)  # type: ignore[attr-defined]
        jitted_call._hangdoctor_jitted = jitted  # type: ignore[attr-defined]
    except Exception:
        pass
    shared.mark_wrapper(jitted_call)
    return jitted_call


def _wrap_initialize(original: Callable[..., object]) -> Callable[..., object]:
    """Note which task of the coordination service this process registers as, and the job's
    line that asked, written at once: a process the service then aborts (a second process
    registering as the same task) leaves no other trace of it."""

    @functools.wraps(original)
    def initialize(*args: object, **kwargs: object) -> object:
        try:
            caller = sys._getframe(1)
            task = kwargs.get("process_id", args[2] if len(args) > 2 else None)
            count = kwargs.get("num_processes", args[1] if len(args) > 1 else None)
            shared.status.distributed_init = [
                task if isinstance(task, int) else None,
                count if isinstance(count, int) else None,
                caller.f_code.co_filename,
                caller.f_lineno,
                caller.f_code.co_name,
            ]
            writer.changed()
            writer.write_now()
        except Exception:
            pass
        try:
            return original(*args, **kwargs)
        except BaseException as error:
            hooks._hide_wrapper_frame(error)
            raise

    shared.mark_wrapper(initialize)
    return initialize


def hook_optax(optax: ModuleType) -> None:
    """`optax.apply_updates` outside a jitted function: a step (inside one it only runs while
    the function is traced, and the jitted call is the step)."""
    frameworks.note_version("optax", optax)
    _wrap_module_function(optax, "apply_updates", "optax.update", skip_in_jax=True)


#: Checkpoint saves: (module, attribute path, source); a save is a step when it returns.
_SAVES = (
    ("orbax.checkpoint", "CheckpointManager.save", "orbax.save"),
    ("orbax.checkpoint", "Checkpointer.save", "orbax.save"),
    ("orbax.checkpoint", "AsyncCheckpointer.save", "orbax.save"),
    ("flax.training.checkpoints", "save_checkpoint", "flax.save"),
    ("flax.training.checkpoints", "save_checkpoint_multiprocess", "flax.save"),
)


def hook_checkpoints(module_name: str) -> None:
    """Orbax's or Flax's checkpointing is imported: its saves are steps."""
    module = sys.modules.get(module_name)
    if module is None:
        return
    for name, path, source in _SAVES:
        if name != module_name:
            continue
        owner: object = module
        *outer, last = path.split(".")
        for part in outer:
            owner = getattr(owner, part, None)
        if owner is not None:
            _wrap_module_function(owner, last, source, skip_in_jax=False)


def _wrap_module_function(owner: object, name: str, source: str, skip_in_jax: bool) -> None:
    """Replace `owner.name` (a module's function or a class's method) by a wrapper that
    counts a step of `source` when it returns."""
    try:
        original = getattr(owner, name, None)
        if original is None or shared.is_wrapper(original) or not callable(original):
            return

        @functools.wraps(original)
        def counted(*args: object, **kwargs: object) -> object:
            try:
                result = original(*args, **kwargs)
            except BaseException as error:
                hooks._hide_wrapper_frame(error)
                raise
            if not (skip_in_jax and getattr(probe.tls, "in_jax", False)):
                _count_step(source)
            return result

        shared.mark_wrapper(counted)
        setattr(owner, name, counted)
    except Exception:
        pass
