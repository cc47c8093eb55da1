"""The TensorFlow and Keras hooks: a step per `tf.function` call (and the scalars it returns,
read as losses: `_hangdoctor_step_losses`) and per batch end of Keras's `fit`, `evaluate` and
`predict`; a batch per `next()` on a `tf.data` iterator in eager mode, with the time spent
waiting for it; a compile phase while a `tf.function` traces (its first call, and every
retrace), and for the whole first call of one that XLA compiles (`jit_compile=True`).

Keras batch ends are counted where Keras's `CallbackList` hands them to the callbacks, not by a
callback added to the user's list: a callback of ours that overrides a batch hook would turn
off Keras 3's asynchronous dispatch of batch ends (and sync the device every step). Calls made
while a `tf.function` is traced (nested functions, a dataset iterated inside a graph) pass
straight through.
"""

from __future__ import annotations

import functools
import sys
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable
    from types import ModuleType

    from hangdoctor.instrument.bootstrap import _hangdoctor_frameworks as frameworks
    from hangdoctor.instrument.bootstrap import _hangdoctor_hooks as hooks
    from hangdoctor.instrument.bootstrap import _hangdoctor_state as shared
    from hangdoctor.instrument.bootstrap import _hangdoctor_step_losses as step_losses
else:
    import _hangdoctor_frameworks as frameworks
    import _hangdoctor_hooks as hooks
    import _hangdoctor_state as shared
    import _hangdoctor_step_losses as step_losses

probe = shared.probe
_count_step = frameworks.count_step
_FUNCTION = "tensorflow.python.eager.polymorphic_function.polymorphic_function"
_TRACING = "tensorflow.python.eager.polymorphic_function.tracing_compilation"
_ITERATORS = "tensorflow.python.data.ops.iterator_ops"
#: Keras's callback lists (Keras 3, and Keras 2 as tf_keras): where batch ends are handed out.
KERAS_CALLBACK_LISTS = {
    "keras": "keras.src.callbacks.callback_list",
    "tf_keras": "tf_keras.src.callbacks",
}
#: Keras 3's trainers, whose `evaluate` (also `fit`'s validation) runs until its data ends.
_KERAS_TRAINERS = ("keras.src.backend.tensorflow.trainer", "TensorFlowTrainer")
_INFINITE = -1  # tf.data.INFINITE_CARDINALITY
_BATCH_ENDS = (("on_train_batch_end", "keras.train_batch"),
               ("on_test_batch_end", "keras.test_batch"),
               ("on_predict_batch_end", "keras.predict_batch"))


def hook_tensorflow(tf: ModuleType) -> None:
    """Wrap tf.function calls, retracing and tf.data's iterator; note the version."""
    frameworks.note_version("tensorflow", tf)
    function_type = getattr(sys.modules.get(_FUNCTION), "Function", None)
    if function_type is not None:
        _patch(function_type, "__call__", _wrap_function_call)
    tracing = sys.modules.get(_TRACING)
    if tracing is not None:
        _patch(tracing, "_create_concrete_function", _tracing_phase)
    iterator = getattr(sys.modules.get(_ITERATORS), "OwnedIterator", None)
    if iterator is not None:
        _patch(iterator, "__next__", _wrap_next)
        _patch(iterator, "get_next", _wrap_next)


def hook_keras(name: str) -> None:
    """Keras (3, or 2 as `tf_keras`) is imported: count its batch ends."""
    frameworks.note_version(name, sys.modules.get(name))
    callbacks = getattr(sys.modules.get(KERAS_CALLBACK_LISTS.get(name, "")), "CallbackList", None)
    if callbacks is None:
        return
    for method, source in _BATCH_ENDS:
        _patch(callbacks, method, functools.partial(_wrap_batch_end, source=source))
    if name == "keras":
        module, trainer = _KERAS_TRAINERS
        owner = getattr(sys.modules.get(module), trainer, None)
        if owner is not None:
            _patch(owner, "evaluate", _wrap_evaluate)


def _endless_evaluation(args: tuple[object, ...], kwargs: dict[str, object],
                        argument: str) -> str | None:
    """Why an `evaluate(x, y, batch_size, verbose, sample_weight, steps, ...)` call cannot end:
    no number of steps, and a dataset that repeats for ever (None: it ends)."""
    steps = kwargs.get("steps", args[5] if len(args) > 5 else None)
    if steps:
        return None
    data = kwargs.get("x", args[0] if args else None)
    cardinality = getattr(data, "cardinality", None)
    if cardinality is None or int(cardinality()) != _INFINITE:
        return None
    return f"{argument}={steps!r} and a dataset of infinite cardinality (it repeats for ever)"


def _user_site(frame: object) -> tuple[str, int, str] | None:
    """The innermost frame of the user's code from `frame` outward."""
    for _ in range(64):
        if frame is None:
            return None
        code = frame.f_code  # type: ignore[attr-defined]
        if hooks._user_code(code):
            return code.co_filename, frame.f_lineno, code.co_name  # type: ignore[attr-defined]
        frame = frame.f_back  # type: ignore[attr-defined]
    return None


def _wrap_evaluate(original: Callable[..., object]) -> Callable[..., object]:
    @functools.wraps(original)
    def evaluate(self: object, *args: object, **kwargs: object) -> object:
        noted = False
        try:
            # fit's validation calls evaluate() with its cached dataset
            argument = ("validation_steps" if kwargs.get("_use_cached_eval_dataset")
                        else "steps")
            why = _endless_evaluation(args, kwargs, argument)
            if why is not None:
                noted = frameworks.enter_endless(
                    "keras evaluate()", why, _user_site(sys._getframe(1)), argument)
        except Exception:
            pass
        try:
            return original(self, *args, **kwargs)
        except BaseException as error:
            hooks._hide_wrapper_frame(error)
            raise
        finally:
            if noted:
                frameworks.leave_endless()

    shared.mark_wrapper(evaluate)
    return evaluate


def _patch(owner: object, name: str, wrap: Callable[[Callable[..., object]], object]) -> None:
    try:
        original = getattr(owner, name, None)
        if original is None or shared.is_wrapper(original):
            return
        setattr(owner, name, wrap(original))
    except Exception:
        pass


def _in_graph() -> bool:
    """Whether this thread is inside a tf.function call of ours (its tracing included)."""
    return bool(getattr(probe.tls, "in_tf", False))


def _wrap_function_call(original: Callable[..., object]) -> Callable[..., object]:
    @functools.wraps(original)
    def __call__(self: object, *args: object, **kwargs: object) -> object:
        tls = probe.tls
        if getattr(tls, "in_tf", False):
            return original(self, *args, **kwargs)
        entry = None
        try:
            # The first call of a function XLA compiles (`jit_compile=True`) compiles it inside
            # the runtime, where no Python shows it: a phase for the whole call. Without XLA the
            # tracing is the compile (`_tracing_phase`), and the rest of a first call runs the
            # graph: a pipeline that never yields its first element is a wait, not a compile.
            if getattr(self, "_jit_compile", None) and (
                    self.experimental_get_tracing_count() == 0):  # type: ignore[attr-defined]
                entry = frameworks.enter_compile("tf.function " + _function_name(self))
        except Exception:
            pass
        tls.in_tf = True
        try:
            result = original(self, *args, **kwargs)
        except BaseException as error:
            hooks._hide_wrapper_frame(error)
            raise
        finally:
            tls.in_tf = False
            if entry is not None:
                frameworks.leave_compile(entry)
        _count_step("tf.function")
        try:
            at = time.time()
            if at >= step_losses.next_look_at[0]:
                step_losses.note_outputs(result, at)
        except Exception:
            pass
        return result

    shared.mark_wrapper(__call__)
    return __call__


def _tracing_phase(original: Callable[..., object]) -> Callable[..., object]:
    """A tf.function traces its Python code again (new input shapes or types)."""
    return frameworks.compile_phase(original, "tf.function tracing")


def _function_name(function: object) -> str:
    name = getattr(function, "_name", None)
    return str(name)[:80] if name else "<function>"


def _wrap_next(original: Callable[..., object]) -> Callable[..., object]:
    clock = time.perf_counter

    @functools.wraps(original)
    def next_element(self: object, *args: object, **kwargs: object) -> object:
        if _in_graph():
            return original(self, *args, **kwargs)
        started = clock()
        try:
            element = original(self, *args, **kwargs)
        except StopIteration as error:
            frameworks.count_batch(clock() - started, got_batch=False)
            hooks._hide_wrapper_frame(error)
            raise
        except BaseException as error:
            hooks._hide_wrapper_frame(error)
            raise
        frameworks.count_batch(clock() - started, got_batch=True)
        return element

    shared.mark_wrapper(next_element)
    return next_element


def _wrap_batch_end(original: Callable[..., object], *, source: str) -> Callable[..., object]:
    @functools.wraps(original)
    def on_batch_end(self: object, *args: object, **kwargs: object) -> object:
        _count_step(source)
        return original(self, *args, **kwargs)

    shared.mark_wrapper(on_batch_end)
    return on_batch_end
