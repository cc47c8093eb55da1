"""The JAX and TensorFlow hooks of the instrumentation, against stand-ins of the frameworks
(tests/fixtures/fake_frameworks: jax.jit's jitted object, XLA's compile entry point,
tf.function's class and tracing, tf.data's eager iterator, Keras's callback list): armed by the
import alone, as in a job, each in a fresh interpreter with the bootstrap first on its path.
What the hooks count is read back from the status the process writes at its exit."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from hangdoctor.instrument import instrumented_environment

FAKES = Path(__file__).resolve().parents[1] / "fixtures" / "fake_frameworks"


def _job(tmp_path: Path, code: str) -> tuple[dict, str]:
    """Run `code` instrumented, with the stand-ins importable; its status and stdout."""
    status_dir = tmp_path / "status"
    status_dir.mkdir()
    env = instrumented_environment(dict(os.environ), status_dir)
    env["PYTHONPATH"] += os.pathsep + str(FAKES)
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    files = list(status_dir.glob("status-*.json"))
    assert len(files) == 1, (files, done.stderr)
    return json.loads(files[0].read_text()), done.stdout


def test_jitted_calls_are_steps_and_the_first_call_compiles(tmp_path: Path) -> None:
    status, out = _job(
        tmp_path,
        """
        import jax, _hangdoctor_state as state
        seen = []
        inner = jax.jit(lambda x: x)

        @jax.jit
        def step(x):
            seen.append([what for what, _ in state.status.compiles])
            return inner(x)  # nested: traced inside step, not a step of its own

        for i in range(5):
            step(i)
        print(seen[0], seen[1], step.lower(1)[0], step.__name__)
        """,
    )
    assert out.split() == ["['jax.jit", "step']", "[]", "lowered", "step"]
    assert status["steps"] == 5 and status["framework_steps"] == {"jax.jit": 5}
    assert status["frameworks"] == {"jax": "0.10.2", "jaxlib": "0.10.2"}
    assert status["compiling"] == []


def test_xla_compiles_are_a_compile_phase(tmp_path: Path) -> None:
    _, out = _job(
        tmp_path,
        """
        import jax, _hangdoctor_state as state
        from jax._src import compiler
        inside = []
        compiler.compile_or_get_cached("hlo", during=lambda: inside.extend(state.status.compiles))
        print(inside[0][0], len(state.status.compiles))
        """,
    )
    assert out.split() == ["xla", "compile", "0"]


def test_a_decorator_factory_and_an_odd_result_are_kept(tmp_path: Path) -> None:
    status, out = _job(
        tmp_path,
        """
        import jax
        scaled = jax.jit(static_argnames=["n"])(lambda x, n: x * n)
        print(scaled(2, n=3), jax.jit(lambda x: x, odd=True))
        """,
    )
    assert out.split() == ["6", "42"]
    assert status["framework_steps"] == {"jax.jit": 1}


def test_an_error_in_a_jitted_function_reaches_the_job_unchanged(tmp_path: Path) -> None:
    status, out = _job(
        tmp_path,
        """
        import jax, traceback

        @jax.jit
        def step(x):
            raise ValueError("bad batch")

        try:
            step(1)
        except ValueError as error:
            names = [f.name for f in traceback.extract_tb(error.__traceback__)]
            print(error, "|", " ".join(names))
        """,
    )
    message, names = out.strip().split(" | ")
    assert message == "bad batch"
    if sys.version_info >= (3, 11):
        assert "jitted_call" not in names  # our frame is hidden from the user's traceback
    assert status["steps"] == 0 and status["compiling"] == []


def test_optax_updates_and_orbax_saves_are_steps(tmp_path: Path) -> None:
    status, out = _job(
        tmp_path,
        """
        import jax, optax
        from orbax.checkpoint import CheckpointManager

        @jax.jit
        def step(w):
            return optax.apply_updates(w, 1)  # inside a jitted function: its call is the step

        w = optax.apply_updates(1, 2)
        w = step(w)
        manager = CheckpointManager()
        print(w, manager.save(10), manager.saved)
        """,
    )
    assert out.split() == ["4", "True", "[10]"]
    assert status["framework_steps"] == {"optax.update": 1, "jax.jit": 1, "orbax.save": 1}
    assert status["frameworks"]["optax"] == "0.2.5"


def test_tf_function_calls_keras_batches_and_tf_data(tmp_path: Path) -> None:
    status, out = _job(
        tmp_path,
        """
        import tensorflow as tf, keras, _hangdoctor_state as state
        from tensorflow.python.data.ops.iterator_ops import OwnedIterator
        from keras.src.callbacks.callback_list import CallbackList
        seen, seen_plain = [], []

        def double(x):
            seen.append([what for what, _ in state.status.compiles])
            return 2 * x

        def plain(x):
            seen_plain.append([what for what, _ in state.status.compiles])
            return x

        f = tf.function(double, jit_compile=True)  # XLA compiles it in its first call
        g = tf.function(plain)  # traced (a phase), then run: no compile
        for i in range(3):
            f(i)
            g(i)
        callbacks = CallbackList()
        for batch in range(4):
            callbacks.on_train_batch_end(batch)
        callbacks.on_test_batch_end(0)
        callbacks.on_predict_batch_end(0)
        iterator = OwnedIterator([1, 2])
        print(next(iterator), iterator.get_next(), list(iterator), callbacks.seen[0])
        print(seen[0], seen[1], seen_plain[0])
        """,
    )
    first, second = out.splitlines()
    assert first == "1 2 [] ('train', 0)"
    assert second == "['tf.function double'] [] []"
    assert status["framework_steps"] == {
        "tf.function": 6,
        "keras.train_batch": 4,
        "keras.test_batch": 1,
        "keras.predict_batch": 1,
    }
    assert status["steps"] == 12
    assert (status["batches"], status["data_ends"]) == (2, 1)
    assert status["frameworks"] == {"tensorflow": "2.21.0", "keras": "3.15.1"}


def test_a_hook_that_fails_leaves_the_call_alone(tmp_path: Path) -> None:
    status, out = _job(
        tmp_path,
        """
        import tensorflow as tf
        from tensorflow.python.eager.polymorphic_function.polymorphic_function import Function
        print(Function(lambda x: x + 1, tracing_count_fails=True)(1))
        """,
    )
    assert out.strip() == "2"
    assert status["framework_steps"] == {"tf.function": 1}


def test_the_in_job_watchdog_sees_a_compile(tmp_path: Path) -> None:
    """`watch()`'s watchdog reads the same statuses: a process that compiles is a compile
    phase there too."""
    from hangdoctor.standalone import readings

    status = {"pid": os.getpid(), "updated_at": 0.0, "compiling": [{"what": "x", "since": 1.0}]}
    (tmp_path / f"status-{os.getpid()}.json").write_text(json.dumps(status))
    assert readings.read(os.getpid(), tmp_path).compiling
    status["compiling"] = []
    (tmp_path / f"status-{os.getpid()}.json").write_text(json.dumps(status))
    assert not readings.read(os.getpid(), tmp_path).compiling


def test_a_job_without_the_frameworks_loads_no_probe(tmp_path: Path) -> None:
    env = instrumented_environment(dict(os.environ), tmp_path / "status")
    done = subprocess.run(
        [sys.executable, "-c", "import sys, json; print('_hangdoctor_probe' in sys.modules)"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.stdout.strip() == "False"


def test_a_jax_process_of_a_multi_process_job_knows_its_rank(tmp_path: Path) -> None:
    """jax.distributed.initialize notes the process's id and the job's size before it connects
    to the coordinator: a process stuck there has its rank too."""
    status, _ = _job(
        tmp_path,
        """
        import time, jax
        from jax._src import distributed
        distributed.global_state.process_id, distributed.global_state.num_processes = 1, 2
        jax.jit(lambda x: x)(1)
        time.sleep(1.5)  # the writer learns who it is on its round
        """,
    )
    assert (status["rank"], status["world_size"]) == (1, 2)


def test_a_tensorflow_worker_knows_its_rank_from_the_tf_config_it_set(tmp_path: Path) -> None:
    status, _ = _job(
        tmp_path,
        """
        import json, os, time
        os.environ["TF_CONFIG"] = json.dumps({
            "cluster": {"chief": ["127.0.0.1:1"], "worker": ["127.0.0.1:2", "127.0.0.1:3"]},
            "task": {"type": "worker", "index": 1},
        })
        import tensorflow as tf
        tf.function(lambda: 1)()
        time.sleep(1.5)
        """,
    )
    assert (status["rank"], status["world_size"]) == (2, 3)
