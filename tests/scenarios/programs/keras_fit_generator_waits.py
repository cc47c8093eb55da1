"""Keras `fit` on a tf.data pipeline built from a Python generator: the generator takes its
records from a queue that a reader thread fills, and the reader stops after the first shard
(an end-of-shard check that returns instead of moving on). The generator then waits in the
queue without a timeout, inside TensorFlow's own thread, and fit waits for its next batch."""

import os
import queue
import threading

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras
import numpy as np
import tensorflow as tf

records: queue.Queue = queue.Queue(maxsize=8)


def read_shards() -> None:
    rng = np.random.default_rng(0)
    for _ in range(24):  # the first shard only: the next ones are never opened
        records.put((rng.standard_normal(4).astype("float32"), np.float32(1.0)))


def generate():
    while True:
        yield records.get()  # HANG: generator-get


dataset = (
    tf.data.Dataset.from_generator(
        generate,
        output_signature=(tf.TensorSpec((4,), tf.float32), tf.TensorSpec((), tf.float32)),
    )
    .batch(8)
    .prefetch(1)
)
model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
model.compile(optimizer="sgd", loss="mse")
threading.Thread(target=read_shards, name="reader", daemon=True).start()
print("fitting", flush=True)
model.fit(dataset, steps_per_epoch=10, epochs=2, verbose=0)
print("done")
