"""Source: https://github.com/tensorflow/tensorflow/issues/8696 (training hangs when the input
queue is no longer filled; see also cardwing/Codes-for-Lane-Detection#69)
Mechanism: a custom GradientTape training loop gets its batches from a queue filled by a loader
thread. The loader raises on a sample with a wrong shape at batch 6 and dies (traceback on
stderr); the loop blocks in queue.get() for a batch that never comes."""

import os
import queue
import threading

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

batches: queue.Queue = queue.Queue(maxsize=4)


def loader() -> None:
    rng = np.random.default_rng(0)
    for i in range(1000):
        x = rng.random((16, 8 if i != 6 else 7), dtype=np.float32)
        if x.shape[1] != 8:
            raise ValueError(f"batch {i}: expected 8 features, got {x.shape[1]}")  # HANG: raise
        batches.put((x, x.sum(axis=1, keepdims=True)))


def main() -> None:
    threading.Thread(target=loader, daemon=True, name="loader").start()
    model = tf.keras.Sequential([tf.keras.Input((8,)), tf.keras.layers.Dense(1)])
    opt = tf.keras.optimizers.SGD(0.05)
    for step in range(50):
        x, y = batches.get()  # HANG: get
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((model(x) - y) ** 2)
        opt.apply_gradients(zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables))
        print(f"step {step} loss {float(loss):.4f}", flush=True)
    print("done", flush=True)


if __name__ == "__main__":
    main()
