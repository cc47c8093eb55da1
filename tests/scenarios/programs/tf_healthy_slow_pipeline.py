"""Source: https://github.com/tensorflow/tensorflow/issues/60747 (a tf.data map pipeline reading
files that seems to freeze; here it is only slow)
Mechanism (healthy): a tf.data pipeline whose map calls a tf.py_function that takes ~1.5 s per
element (a slow remote read), consumed by a custom training loop that prints every step: slow,
steady progress for 16 steps, then the job ends."""

import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402


def fetch(index):
    time.sleep(1.5)  # a slow object-store read
    rng = np.random.default_rng(int(index))
    return rng.random(8, dtype=np.float32)


def main() -> None:
    ds = tf.data.Dataset.range(16).map(lambda i: tf.py_function(fetch, [i], tf.float32))
    ds = ds.map(lambda x: tf.ensure_shape(x, (8,))).batch(1)
    model = tf.keras.Sequential([tf.keras.Input((8,)), tf.keras.layers.Dense(1)])
    opt = tf.keras.optimizers.SGD(0.05)
    for step, x in enumerate(ds):
        y = tf.reduce_sum(x, axis=1, keepdims=True)
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((model(x) - y) ** 2)
        opt.apply_gradients(zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables))
        print(f"step {step} loss {float(loss):.4f}", flush=True)
    print("done", flush=True)


if __name__ == "__main__":
    main()
