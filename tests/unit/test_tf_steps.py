"""Which TensorFlow steps read their own input: a step waits in the runtime for a tf.data
element only when it was handed an iterator, read from py-spy's locals or, without locals,
from Keras's step functions, which always take one."""

from __future__ import annotations

from hangdoctor.analysis.tf_steps import graph_input
from hangdoctor.evidence.build import SITE
from hangdoctor.evidence.build import frame as f

EXECUTE = f(f"{SITE}/tensorflow/python/eager/execute.py", 53, "quick_execute")
CALL = f"{SITE}/tensorflow/python/eager/polymorphic_function/polymorphic_function.py"
TRAINER = f"{SITE}/keras/src/backend/tensorflow/trainer.py"


def test_keras_validation_without_locals_is_the_fit_s_validation_data() -> None:
    frames = (
        EXECUTE,
        f(TRAINER, 241, "TensorFlowTrainer._make_function.<locals>.function"),
        f(TRAINER, 510, "TensorFlowTrainer.evaluate"),
        f(TRAINER, 423, "TensorFlowTrainer.fit"),
        f("/home/u/train.py", 9, "main"),
    )
    found = graph_input(frames)
    assert found is not None
    assert (found.iterator, found.keras_loop, found.in_fit) == ("iterator", "evaluate", True)


def test_a_custom_step_is_known_by_the_iterator_it_was_called_with() -> None:
    called = f(
        CALL, 833, "Function.__call__", local_vars={"args": ("(<OwnedIterator at 0x7f01>)", None)}
    )
    found = graph_input((EXECUTE, called, f("/home/u/train.py", 30, "train")))
    assert found is not None and (found.iterator, found.keras_loop) == ("OwnedIterator", None)
    tensors = f(
        CALL, 833, "Function.__call__", local_vars={"args": ("(<EagerTensor at 0x7f01>)", None)}
    )
    assert graph_input((EXECUTE, tensors)) is None


def test_a_thread_outside_the_runtime_is_not_waiting_in_a_step() -> None:
    frames = (f(TRAINER, 241, "TensorFlowTrainer._make_function.<locals>.function"),)
    assert graph_input(frames) is None
