"""Source: https://github.com/tensorflow/tensorflow/issues/14529 (from_generator pipeline stuck
indefinitely; see also tensorflow/tensorflow#15755, "from_generator blocks input?")
Mechanism: Dataset.from_generator wraps a generator that takes decoded samples from a queue
filled by a reader thread. The reader dies on an unreadable file after 40 samples; the generator
then blocks in queue.get() inside tf.data, and model.fit waits forever for the next batch."""

import os
import queue
import threading

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

samples: queue.Queue = queue.Queue(maxsize=8)


def reader() -> None:
    rng = np.random.default_rng(0)
    for i in range(10_000):
        if i == 40:
            raise OSError(f"image {i:05d}.jpg: unreadable")  # HANG: raise
        samples.put((rng.random(8, dtype=np.float32), np.float32(i % 2)))


def gen():
    while True:
        yield samples.get()  # HANG: get


def main() -> None:
    threading.Thread(target=reader, daemon=True, name="reader").start()
    spec = (tf.TensorSpec((8,), tf.float32), tf.TensorSpec((), tf.float32))
    ds = tf.data.Dataset.from_generator(gen, output_signature=spec).batch(4)
    model = tf.keras.Sequential([tf.keras.Input((8,)), tf.keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    model.fit(ds, epochs=4, steps_per_epoch=4, verbose=2)  # HANG: fit
    print("done", flush=True)


if __name__ == "__main__":
    main()
