"""What the JAX and TensorFlow hooks cost per step: a call of a small jitted function, a call of
a small tf.function, a `next()` on a tf.data iterator and a Keras batch end handed to the
callbacks, each timed with the instrumentation armed (as under `hangdoctor run`: the bootstrap
first on PYTHONPATH, a status folder) and without it, in the JAX/TensorFlow interpreter.

Each variant runs in a fresh interpreter, armed and bare alternated round by round; the table
gives the median time per call of each, the median of the per-round ratios (armed / bare) and
the ratio of the fastest rounds (the least disturbed by other load on a shared machine).
Nothing asserts on timings.

    .venv/bin/python benchmarks/bench_framework_hooks.py [--rounds 5]
        [--python .venv-jaxtf/bin/python]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT))

from hangdoctor.instrument import instrumented_environment  # noqa: E402
from tests.scenarios.scenario import jaxtf_python  # noqa: E402

TIMEOUT_S = 300

# One measurement: ns per call of the case's BODY, best of 5 repeats after a warm-up (the
# first call of a jitted function or tf.function compiles: not a step's cost).
MEASURE = """
import os, sys, time
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
SETUP
def run(n):
    started = time.perf_counter_ns()
    for _ in range(n):
        BODY
    return time.perf_counter_ns() - started
n = int(sys.argv[1])
run(max(1, n // 10))
print(min(run(n) for _ in range(5)) / n)
"""

CASES = {
    "jax.jit call (x + 1 on 8 floats)": (
        "import jax, jax.numpy as jnp\nf = jax.jit(lambda x: x + 1)\nx = jnp.ones(8)",
        "f(x)",
        20000,
    ),
    "tf.function call (x + 1 on 8 floats)": (
        "import tensorflow as tf\nf = tf.function(lambda x: x + 1)\nx = tf.ones(8)",
        "f(x)",
        5000,
    ),
    "tf.data iterator next() (eager)": (
        "import tensorflow as tf\nit = iter(tf.data.Dataset.range(10**9))",
        "next(it)",
        5000,
    ),
    "Keras batch end (CallbackList, no callbacks)": (
        "import keras\ncb = keras.callbacks.CallbackList([])",
        "cb.on_train_batch_end(0)",
        200000,
    ),
}


def measure(python: str, setup: str, body: str, calls: int, armed: bool, status: Path) -> float:
    """ns per call in a fresh interpreter, armed (instrumented) or bare."""
    env = dict(os.environ)
    env.pop("HANGDOCTOR_STATUS_DIR", None)
    if armed:
        env = instrumented_environment(env, status)
    code = MEASURE.replace("SETUP", setup).replace("BODY", body)
    done = subprocess.run(
        [python, "-c", code, str(calls)],
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=True,
    )
    return float(done.stdout.split()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--python", default=None, help="the JAX/TensorFlow interpreter")
    args = parser.parse_args()
    python = args.python or (str(found) if (found := jaxtf_python()) else None)
    if python is None:
        print("no JAX/TensorFlow interpreter: --python or HANGDOCTOR_JAXTF_PYTHON", file=sys.stderr)
        return 2
    print(
        f"| case | bare, ns/call | armed, ns/call | armed / bare (median of {args.rounds}) "
        "| fastest armed / fastest bare |"
    )
    print("| --- | ---: | ---: | ---: | ---: |")
    with tempfile.TemporaryDirectory() as tmp:
        status = Path(tmp)
        for name, (setup, body, calls) in CASES.items():
            bare, armed, ratios = [], [], []
            for _ in range(args.rounds):
                b = measure(python, setup, body, calls, False, status)
                a = measure(python, setup, body, calls, True, status)
                bare.append(b)
                armed.append(a)
                ratios.append(a / b)
            print(
                f"| {name} | {statistics.median(bare):.0f} | {statistics.median(armed):.0f} "
                f"| {statistics.median(ratios):.3f} | {min(armed) / min(bare):.3f} |",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
