"""A TensorFlow step that reads its own input: Keras's `fit`, `evaluate` and `predict`, and a
custom loop's `step(iterator)`, hand a tf.data iterator to a `tf.function` whose graph calls
`next()` on it. Python then shows only the step's call (TensorFlow's `quick_execute`), whether
the runtime is computing the step or waiting for the pipeline's next element: what this module
reads is that the step's input comes from such an iterator, and which Keras loop runs it."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from hangdoctor.analysis.frames import in_function, python_frames
from hangdoctor.evidence.model import Frame

#: Where TensorFlow runs the user's Python for a tf.data pipeline (`from_generator`,
#: `py_function`, `numpy_function`): a thread of its own, called from its runtime's registry.
_PY_FUNC = "tensorflow/python/ops/script_ops.py"
#: Where a thread waits for TensorFlow's runtime to run a function (native below).
_EXECUTE = "/tensorflow/python/eager/execute.py"
#: A tf.function's call, whose `args` local holds what it was called with.
_FUNCTION_CALL = "tensorflow/python/eager/polymorphic_function/polymorphic_function.py"
#: Keras 3's TensorFlow trainer: its step functions take the iterator (`function(iterator)`,
#: `one_step_on_iterator`, `multi_step_on_iterator`), read without locals too.
_KERAS_TRAINER = "keras/src/backend/tensorflow/trainer.py"
_KERAS_STEP_FUNCTIONS = ("function", "one_step_on_iterator", "multi_step_on_iterator")
#: tf.data's iterator classes as py-spy prints them (`<OwnedIterator at 0x...>`): the plain one,
#: the multi-device one, and a distribution strategy's.
_ITERATOR_REPR = re.compile(r"<(\w*Iterator(?:V\d)?) at 0x")
#: The Keras loop a step runs in, innermost first, by the trainer's method.
_KERAS_LOOPS = ("evaluate", "predict", "fit")


@dataclass(frozen=True)
class GraphInput:
    """A step waiting in TensorFlow's runtime whose graph reads a tf.data iterator."""

    iterator: str  # its class, or "iterator" when only Keras's frames say so
    keras_loop: str | None  # "fit", "evaluate" (inside fit: validation), "predict"; None: own loop
    in_fit: bool  # an evaluate run by fit: the validation data


def waits_in_tf_runtime(frames: Sequence[Frame]) -> bool:
    """Whether the thread's innermost Python frame hands work to TensorFlow's runtime
    (`quick_execute`: a tf.function step or an op), which runs it natively below."""
    return in_function(python_frames(frames)[:1], _EXECUTE, {"quick_execute"})


def _iterator_in_args(frame: Frame) -> str | None:
    for local in frame.locals:
        if local.name in ("args", "iterator") and local.repr:
            found = _ITERATOR_REPR.search(local.repr)
            if found:
                return found.group(1)
    return None


def graph_input(frames: Sequence[Frame]) -> GraphInput | None:
    """What the step this thread waits in reads its input from, when the thread is inside
    TensorFlow's runtime running a function that was handed a tf.data iterator; None otherwise."""
    if not waits_in_tf_runtime(frames):
        return None
    python = python_frames(frames)
    iterator = None
    keras_step = False
    loops: list[str] = []
    for frame in python:
        path = frame.file.replace("\\", "/")
        name = frame.function.split(".")[-1]
        if path.endswith(_FUNCTION_CALL) and iterator is None:
            iterator = _iterator_in_args(frame)
        elif path.endswith(_KERAS_TRAINER):
            keras_step = keras_step or name in _KERAS_STEP_FUNCTIONS
            if name in _KERAS_LOOPS:
                loops.append(name)
    if iterator is None and not keras_step:
        return None
    return GraphInput(
        iterator=iterator or "iterator",
        keras_loop=loops[0] if loops else None,
        in_fit="fit" in loops[1:],
    )


def runs_pipeline_python(frames: Sequence[Frame]) -> bool:
    """Whether the thread runs the user's Python of a tf.data pipeline (a generator, a
    `py_function`): what the pipeline waits for is then on that thread's stack."""
    return in_function(frames, _PY_FUNC, {"__call__"})
