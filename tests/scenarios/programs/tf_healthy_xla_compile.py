"""Source: https://github.com/tensorflow/tensorflow/issues/57972 ([XLA] Slow compilation: "It
might take few minutes", "Very slow compile?")
Mechanism (healthy): a tf.function(jit_compile=True) unrolls 220 recurrent steps in a Python
loop; tracing and XLA compilation take tens of seconds with nothing printed, then the steps run
fast and the job ends."""

import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import tensorflow as tf  # noqa: E402

UNROLL = 220


@tf.function(jit_compile=True)
def rollout(x, w):
    for i in range(UNROLL):  # a Python loop: unrolled into the graph
        x = tf.tanh(tf.matmul(x, w)) * (1.0 + 0.001 * i) + tf.reverse(x, axis=[0])
    return tf.reduce_mean(x**2)


def main() -> None:
    x = tf.ones([8, 8]) * 0.1
    w = tf.Variable(tf.eye(8) * 0.5)
    start = time.time()
    print("compiling the unrolled rollout...", flush=True)
    loss = rollout(x, w)
    print(f"compiled in {time.time() - start:.1f}s, loss {float(loss):.5f}", flush=True)
    for step in range(5):
        w.assign(w * 0.999)
        print(f"step {step} loss {float(rollout(x, w)):.5f}", flush=True)
    print("done", flush=True)


if __name__ == "__main__":
    main()
