"""What the JAX and TensorFlow hooks cost per step: a call of a small jitted function, a call of
a small tf.function, a `next()` on a tf.data iterator and a Keras batch end handed to the
callbacks, in the JAX/TensorFlow interpreter with the instrumentation armed as under
`hangdoctor run` (the bootstrap first on PYTHONPATH, a status folder).

Each case runs in one armed interpreter that times the hooked call and the framework's own
(the function the hook wraps, which the wrapper keeps as `__wrapped__`, or for a jitted
function as `_hangdoctor_jitted`), alternated pair by
pair, so that both meet the same load on a shared machine; the table gives the median time per
call of each, the median of the per-pair ratios (hooked / original) and the time added per call.
Nothing asserts on timings.

    .venv/bin/python benchmarks/bench_framework_hooks.py [--pairs 9]
        [--python .venv-jaxtf/bin/python]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT))

from hangdoctor.instrument import instrumented_environment  # noqa: E402
from tests.scenarios.scenario import jaxtf_python  # noqa: E402

TIMEOUT_S = 600

# In the armed interpreter: SETUP defines `hooked()` and `original()`, one call each; pairs of
# runs of N calls, alternated, after a warm-up (a first call compiles: not a step's cost).
MEASURE = """
import json, os, statistics, sys, time
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
SETUP
def run(call, n):
    started = time.perf_counter_ns()
    for _ in range(n):
        call()
    return (time.perf_counter_ns() - started) / n
n, pairs = int(sys.argv[1]), int(sys.argv[2])
run(hooked, n // 10); run(original, n // 10)
found = []
for _ in range(pairs):
    found.append((run(hooked, n), run(original, n)))
assert "_hangdoctor_probe" in sys.modules
print(json.dumps(found))
"""

CASES = {
    "jax.jit call (x + 1 on 8 floats)": (
        "import jax, jax.numpy as jnp\nf = jax.jit(lambda x: x + 1)\nx = jnp.ones(8)\n"
        "raw = f._hangdoctor_jitted\nhooked = lambda: f(x)\noriginal = lambda: raw(x)",
        20000,
    ),
    "jax.jit step returning (8 parameters, a scalar loss)": (
        "import jax, jax.numpy as jnp\n"
        "def step(p, x):\n"
        "    loss = sum(jnp.mean(v * x) for v in p.values())\n"
        "    return {k: v - 0.1 for k, v in p.items()}, loss\n"
        "f = jax.jit(step)\np = {str(i): jnp.ones(8) for i in range(8)}\nx = jnp.ones(8)\n"
        "raw = f._hangdoctor_jitted\n"
        "hooked = lambda: f(p, x)[1].block_until_ready()\n"
        "original = lambda: raw(p, x)[1].block_until_ready()",
        5000,
    ),
    "tf.function call (x + 1 on 8 floats)": (
        "import tensorflow as tf\nf = tf.function(lambda x: x + 1)\nx = tf.ones(8)\n"
        "call = type(f).__call__.__wrapped__\nhooked = lambda: f(x)\n"
        "original = lambda: call(f, x)",
        3000,
    ),
    "tf.data iterator next() (eager)": (
        "import tensorflow as tf\nit = iter(tf.data.Dataset.range(10**9))\n"
        "step = type(it).__next__.__wrapped__\nhooked = lambda: next(it)\n"
        "original = lambda: step(it)",
        3000,
    ),
    "Keras batch end (CallbackList, no callbacks)": (
        "import keras\ncb = keras.callbacks.CallbackList([])\n"
        "end = type(cb).on_train_batch_end.__wrapped__\n"
        "hooked = lambda: cb.on_train_batch_end(0)\noriginal = lambda: end(cb, 0)",
        100000,
    ),
}


def median(values: list[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=9)
    parser.add_argument("--python", default=None, help="the JAX/TensorFlow interpreter")
    args = parser.parse_args()
    python = args.python or (str(found) if (found := jaxtf_python()) else None)
    if python is None:
        print("no JAX/TensorFlow interpreter: --python or HANGDOCTOR_JAXTF_PYTHON", file=sys.stderr)
        return 2
    print(
        f"| case | original, ns/call | hooked, ns/call | hooked / original (median of "
        f"{args.pairs} pairs) | added per call, ns |"
    )
    print("| --- | ---: | ---: | ---: | ---: |")
    with tempfile.TemporaryDirectory() as status:
        env = instrumented_environment(dict(os.environ), Path(status))
        for name, (setup, calls) in CASES.items():
            done = subprocess.run(
                [python, "-c", MEASURE.replace("SETUP", setup), str(calls), str(args.pairs)],
                env=env,
                capture_output=True,
                text=True,
                timeout=TIMEOUT_S,
                check=True,
            )
            pairs = json.loads(done.stdout.splitlines()[-1])
            hooked, original = median([h for h, _ in pairs]), median([o for _, o in pairs])
            ratio = median([h / o for h, o in pairs])
            added = median([h - o for h, o in pairs])
            print(
                f"| {name} | {original:.0f} | {hooked:.0f} | {ratio:.3f} | {added:.0f} |",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
