"""Healthy Keras run with a long silent start: counting TFRecord examples by iterating the dataset.

Source: https://github.com/tensorflow/tensorflow/issues/26966
  ("Add a length or size attribute to the tf.data.Dataset": there is no way to get the
  number of records in TFRecord files "without having to iterate through the entire
  dataset"; users count them with sum(1 for _ in dataset) to derive steps_per_epoch.)

What happens:
  The script writes 8 TFRecord shards of fixed-length feature vectors (logged), then
  needs steps_per_epoch for model.fit. TFRecordDataset has UNKNOWN cardinality, so it
  counts the examples the common way: sum(1 for _ in parsed_dataset), i.e. a Python
  loop that pulls ~72k single examples through the eager iterator, one at a time.
  That pass prints nothing and takes roughly 30-50 s on a loaded 2-core CPU (one core
  busy in the Python iterator / IteratorGetNext), which looks exactly like a stall in
  the input pipeline to a naive watchdog. It is healthy: the loop finishes, the count
  is printed and model.fit trains 2 epochs with a log line every 50 steps, then the
  process exits 0.
"""
import atexit
import os
import shutil
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")

import numpy as np
import tensorflow as tf
import keras

tf.config.threading.set_intra_op_parallelism_threads(1)
tf.config.threading.set_inter_op_parallelism_threads(2)

WORKDIR = tempfile.mkdtemp(prefix="r20b_count_")
atexit.register(shutil.rmtree, WORKDIR, ignore_errors=True)

N_FEATURES = 32
N_SHARDS = 8
PER_SHARD = 9000
BATCH = 256
EPOCHS = 2


def write_shards():
    rng = np.random.default_rng(7)
    w_true = rng.normal(size=(N_FEATURES,)).astype("float32")
    paths = []
    for s in range(N_SHARDS):
        path = os.path.join(WORKDIR, f"train-{s:05d}-of-{N_SHARDS:05d}.tfrecord")
        x = rng.normal(size=(PER_SHARD, N_FEATURES)).astype("float32")
        y = (x @ w_true > 0).astype("float32")
        rows = np.concatenate([x, y[:, None]], axis=1)
        with tf.io.TFRecordWriter(path) as wr:
            for r in rows:
                wr.write(r.tobytes())
        paths.append(path)
        print(f"wrote shard {s + 1}/{N_SHARDS}: {path}", flush=True)
    return paths


def parse(record):
    v = tf.io.decode_raw(record, tf.float32)
    v = tf.reshape(v, [N_FEATURES + 1])
    return v[:N_FEATURES], v[N_FEATURES:]


def make_parsed(files):
    return tf.data.TFRecordDataset(files).map(parse)


def count_examples(ds):
    # cardinality() is UNKNOWN for TFRecordDataset, so walk the data once
    return sum(1 for _ in ds)  # HANG: silent_full_pass_count


def build_model():
    model = keras.Sequential([
        keras.Input(shape=(N_FEATURES,)),
        keras.layers.Dense(64, activation="relu"),
        keras.layers.Dense(32, activation="relu"),
        keras.layers.Dense(1, activation="sigmoid"),
    ])
    model.compile(optimizer=keras.optimizers.Adam(2e-3), loss="binary_crossentropy",
                  metrics=["accuracy"])
    return model


class StepLogger(keras.callbacks.Callback):
    def __init__(self, every=50):
        super().__init__()
        self.every, self.t0, self.epoch = every, time.time(), 0

    def on_epoch_begin(self, epoch, logs=None):
        self.epoch = epoch

    def on_train_batch_end(self, batch, logs=None):
        if batch % self.every == 0:
            print(f"epoch {self.epoch} step {batch} loss {logs['loss']:.4f} "
                  f"acc {logs['accuracy']:.3f} ({time.time() - self.t0:.1f}s)", flush=True)

    def on_epoch_end(self, epoch, logs=None):
        print(f"epoch {epoch} done: loss {logs['loss']:.4f} acc {logs['accuracy']:.3f}", flush=True)


def main():
    t0 = time.time()
    files = write_shards()
    parsed = make_parsed(files)
    card = int(parsed.cardinality())
    print(f"cardinality reported by tf.data: {card} (unknown); counting examples...", flush=True)
    n = count_examples(parsed)  # HANG: count_before_fit
    steps = n // BATCH
    print(f"counted {n} examples in {time.time() - t0:.1f}s -> steps_per_epoch={steps}", flush=True)

    train = parsed.shuffle(8192, seed=0).repeat().batch(BATCH).prefetch(2)
    model = build_model()
    hist = model.fit(train, epochs=EPOCHS, steps_per_epoch=steps,
                     callbacks=[StepLogger(every=50)], verbose=0)
    print(f"done: final loss {hist.history['loss'][-1]:.4f} "
          f"acc {hist.history['accuracy'][-1]:.3f} in {time.time() - t0:.1f}s", flush=True)


if __name__ == "__main__":
    main()
