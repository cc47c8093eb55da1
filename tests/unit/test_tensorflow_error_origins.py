"""TensorFlow's errors name their origin inside their message (analysis/tracebacks.py): a graph
op that failed quotes the stack that created it, a `tf.py_function` or `tf.numpy_function`
quotes the Python traceback of the function it ran, AutoGraph lists the converted function's
frames under `in user code:`. Each log is TensorFlow 2.21's own output (Keras 3), recorded on
CPU from a job that failed that way; paths shortened."""

from __future__ import annotations

from pathlib import Path

import pytest

from hangdoctor.analysis.tracebacks import Raised, tracebacks

_LOGS = Path(__file__).parents[1] / "fixtures" / "logs" / "tensorflow"


def _failure(name: str) -> Raised:
    """The one exception the job died of (none other is printed unquoted)."""
    found = [r for r in tracebacks((_LOGS / name).read_text().splitlines()) if not r.quoted]
    assert len(found) == 1, [f"{r.type}: {r.message}" for r in found]
    return found[0]


def _where(raised: Raised) -> tuple[str, int, str]:
    location = raised.location
    assert location is not None
    return Path(location.file).name, location.line, location.function


def test_a_failed_op_in_a_custom_layer_is_found_where_the_layer_created_it():
    # `Graph execution error:`, then `Detected at node .../GatherV2 defined at`, then its stack
    failed = _failure("op_stack_gather_in_layer.log")
    assert _where(failed) == ("gather_layer.py", 18, "main")  # the fit line
    origin = failed.origin
    assert origin is not failed and origin.quoted
    assert _where(origin) == ("gather_layer.py", 11, "call")
    assert origin.short_type == "InvalidArgumentError"
    assert origin.message == "indices[0,0] = 10 is not in [0, 10)"


@pytest.mark.parametrize(
    "log",
    ["numpy_function_in_map_fit.log", "py_function_in_map_step.log"],
)
def test_a_python_function_in_the_input_pipeline_is_found_at_its_raise(log: str):
    # The op that ran it has no known stack; the error restates the exception, then quotes
    # the function's traceback (from Keras's fit, and from a tf.function step over an iterator).
    origin = _failure(log).origin
    assert _where(origin) == ("matrix.py", 11, "load_record")
    assert (origin.short_type, origin.message) == ("ValueError", "record 37 is truncated")


def test_an_error_autograph_met_is_found_in_the_converted_functions_own_line():
    failed = _failure("autograph_reshape_in_step.log")
    assert failed.message == "in user code:"
    origin = failed.origin
    assert _where(origin) == ("matmul_loop.py", 10, "step")  # without AutoGraph's ` *`
    assert origin.location is not None
    assert origin.location.code == "return tf.reduce_sum(tf.reshape(h, (-1, 6)))"
    assert origin.message.startswith("Dimension size must be evenly divisible by 6 but is 9")


def test_keras_s_own_traceback_of_a_layer_call_needs_no_unwrapping():
    failed = _failure("autograph_layer_call.log")
    assert failed.origin is failed
    assert _where(failed) == ("matrix2.py", 12, "bad")


def test_an_op_error_without_a_stack_stays_at_the_users_line_that_ran_it():
    # A map function's op failed; TensorFlow names neither its stack nor its function.
    failed = _failure("map_op_without_stack.log")
    assert failed.origin is failed
    assert _where(failed) == ("map_graph.py", 10, "main")


def test_a_stack_listing_far_from_the_exceptions_line_is_not_its_origin():
    lines = [
        "Traceback (most recent call last):",
        '  File "/home/ml/train.py", line 30, in <module>',
        "    main()",
        "RuntimeError: Graph execution error:",
        "step 3 loss 0.5",
        "Detected at node Foo defined at (most recent call last):",
        '  File "/home/ml/train.py", line 12, in build',
        "boom",
    ]
    (failed,) = [r for r in tracebacks(lines) if not r.quoted]
    assert failed.origin is failed
