"""Keras fit dies at the first validation pass: train and val datasets cache to the same file prefix.

Source: https://github.com/tensorflow/tensorflow/issues/18266
  ("Cache lockfile already exists": a user builds train and validation pipelines with
  the same helper ending in ds.cache(filename=cachedir + "/" + filename); when fit
  reaches evaluation, the validation iterator fails with AlreadyExistsError because
  the training cache's lockfile is still on disk.)

What happens:
  build_pipeline() decodes TFRecord shards, normalises the features and caches the
  decoded examples on local disk with Dataset.cache(<prefix>), then shuffles, repeats
  and batches. The cache prefix comes from CONFIG; the validation pipeline was added by
  copy-paste and still passes CONFIG["train_cache"]. Training uses steps_per_epoch, so
  after the first epoch the training iterator is in the middle of its first pass over the data:
  its cache writer is still open and owns "<prefix>_0.lockfile". At the epoch end
  model.fit runs validation; the validation CacheDataset iterator finds no finished
  cache (no .index file) and an existing lockfile, so TensorFlow raises
  tensorflow.python.framework.errors_impl.AlreadyExistsError: "There appears to be a
  concurrent caching iterator running - cache lockfile already exists". The exception
  surfaces out of model.fit, but its origin is the cache(...) call / the shared prefix
  in the user's pipeline code. The process exits with status 1.
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

WORKDIR = tempfile.mkdtemp(prefix="r20b_cache_")
atexit.register(shutil.rmtree, WORKDIR, ignore_errors=True)
CONFIG = {
    "data_dir": os.path.join(WORKDIR, "tfrecords"),
    "train_cache": os.path.join(WORKDIR, "cache", "decoded_train"),
    "val_cache": os.path.join(WORKDIR, "cache", "decoded_val"),
    "n_features": 24,
    "n_classes": 5,
    "batch": 64,
    "steps_per_epoch": 120,
    "epochs": 6,
}


def write_shards(split, n_shards, per_shard, seed):
    rng = np.random.default_rng(seed)
    proto_w = rng.normal(size=(CONFIG["n_features"], CONFIG["n_classes"]))
    os.makedirs(CONFIG["data_dir"], exist_ok=True)
    paths = []
    for s in range(n_shards):
        path = os.path.join(CONFIG["data_dir"], f"{split}-{s:03d}.tfrecord")
        with tf.io.TFRecordWriter(path) as w:
            for _ in range(per_shard):
                x = rng.normal(size=CONFIG["n_features"]).astype("float32")
                y = int(np.argmax(x @ proto_w + 0.3 * rng.normal(size=CONFIG["n_classes"])))
                ex = tf.train.Example(features=tf.train.Features(feature={
                    "x": tf.train.Feature(float_list=tf.train.FloatList(value=x)),
                    "y": tf.train.Feature(int64_list=tf.train.Int64List(value=[y])),
                }))
                w.write(ex.SerializeToString())
        paths.append(path)
    return paths


FEATURES = {
    "x": tf.io.FixedLenFeature([CONFIG["n_features"]], tf.float32),
    "y": tf.io.FixedLenFeature([1], tf.int64),
}


def decode(record):
    ex = tf.io.parse_single_example(record, FEATURES)
    x = (ex["x"] - 0.0) / 1.0
    return x, tf.squeeze(ex["y"])


def build_pipeline(files, cache_prefix, training):
    ds = tf.data.TFRecordDataset(files)
    ds = ds.map(decode, num_parallel_calls=2)
    os.makedirs(os.path.dirname(cache_prefix), exist_ok=True)
    ds = ds.cache(cache_prefix)  # HANG: cache_to_shared_prefix
    if training:
        ds = ds.shuffle(2048).repeat()
    return ds.batch(CONFIG["batch"]).prefetch(2)


def build_model():
    inp = keras.Input(shape=(CONFIG["n_features"],))
    h = keras.layers.Dense(128, activation="relu")(inp)
    h = keras.layers.Dropout(0.1)(h)
    h = keras.layers.Dense(64, activation="relu")(h)
    out = keras.layers.Dense(CONFIG["n_classes"])(h)
    model = keras.Model(inp, out)
    model.compile(optimizer="adam",
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    return model


class StepLogger(keras.callbacks.Callback):
    def __init__(self, every=20):
        super().__init__()
        self.every, self.t0, self.epoch = every, time.time(), 0

    def on_epoch_begin(self, epoch, logs=None):
        self.epoch = epoch

    def on_train_batch_end(self, batch, logs=None):
        if batch % self.every == 0:
            print(f"epoch {self.epoch} step {batch} loss {logs['loss']:.4f} "
                  f"acc {logs['accuracy']:.3f} ({time.time() - self.t0:.1f}s)", flush=True)

    def on_epoch_end(self, epoch, logs=None):
        print(f"epoch {epoch} done: loss {logs['loss']:.4f} val_loss {logs.get('val_loss', float('nan')):.4f}",
              flush=True)


def main():
    print(f"workdir {WORKDIR}", flush=True)
    train_files = write_shards("train", n_shards=8, per_shard=2500, seed=1)
    val_files = write_shards("val", n_shards=2, per_shard=1000, seed=2)
    print(f"wrote {len(train_files)} train / {len(val_files)} val shards", flush=True)

    train_ds = build_pipeline(train_files, CONFIG["train_cache"], training=True)
    val_ds = build_pipeline(val_files, CONFIG["train_cache"], training=False)  # HANG: val_reuses_train_cache_prefix

    model = build_model()
    model.fit(train_ds, validation_data=val_ds, epochs=CONFIG["epochs"],
              steps_per_epoch=CONFIG["steps_per_epoch"], callbacks=[StepLogger()],
              verbose=0)
    model.save(os.path.join(WORKDIR, "model.keras"))
    print("training finished", flush=True)


if __name__ == "__main__":
    main()
