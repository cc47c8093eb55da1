"""Keras fit hangs at an epoch end: checkpoint-upload callback deadlocks its own 1-thread executor.

Source: https://github.com/python/cpython/pull/141620
  (docs fix for gh-141617, the concurrent.futures "Deadlock" example: with
  ThreadPoolExecutor(max_workers=1), a task that submits another task to the same
  executor and calls .result() on it waits forever, because the only worker thread
  is the one doing the waiting.)

What happens:
  A small Keras regression model trains with model.fit on a tf.data pipeline. An
  AsyncCheckpointUploader callback saves the weights at every epoch end and hands the
  "upload" (copy to a fake remote bucket + manifest with sha256 of every file) to a
  ThreadPoolExecutor(max_workers=1) so that training is not slowed down. To bound the
  backlog it first waits for the previous upload (self._pending.result()).
  The upload task itself fans out the checksum work with self._pool.submit(...) onto
  the SAME single-worker pool and waits on those futures. The only worker thread is
  busy running the upload task, so the checksum tasks stay queued forever and the
  upload never finishes. Epoch 1 ends normally (the upload is only queued); at the end
  of epoch 2 the main thread blocks in self._pending.result() inside on_epoch_end and
  training never resumes. No timeout, no exception: the process sleeps forever
  (main thread in Future.result -> Condition.wait, worker "ckpt-upload_0" likewise).
"""
import os
import shutil
import hashlib
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")

import numpy as np
import tensorflow as tf
import keras

tf.config.threading.set_intra_op_parallelism_threads(1)
tf.config.threading.set_inter_op_parallelism_threads(2)

WORKDIR = tempfile.mkdtemp(prefix="r20b_ckpt_")
LOCAL_CKPT = os.path.join(WORKDIR, "ckpt")
REMOTE = os.path.join(WORKDIR, "bucket")  # stands in for gs:// / s3://
os.makedirs(LOCAL_CKPT)
os.makedirs(REMOTE)

BATCH = 64
STEPS_PER_EPOCH = 400
EPOCHS = 20


def make_dataset(n=4096, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 16)).astype("float32")
    w = rng.normal(size=(16, 1)).astype("float32")
    y = (x @ w + 0.1 * rng.normal(size=(n, 1))).astype("float32")
    ds = tf.data.Dataset.from_tensor_slices((x, y))
    return ds.shuffle(1024, seed=seed).repeat().batch(BATCH).prefetch(2)


def build_model():
    model = keras.Sequential([
        keras.Input(shape=(16,)),
        keras.layers.Dense(256, activation="relu"),
        keras.layers.Dense(256, activation="relu"),
        keras.layers.Dense(1),
    ])
    model.compile(optimizer=keras.optimizers.Adam(1e-3), loss="mse")
    return model


def _sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 16), b""):
            h.update(chunk)
    return os.path.basename(path), h.hexdigest()


class StepLogger(keras.callbacks.Callback):
    def __init__(self, every=10):
        super().__init__()
        self.every = every
        self.t0 = time.time()
        self.epoch = 0

    def on_epoch_begin(self, epoch, logs=None):
        self.epoch = epoch

    def on_train_batch_end(self, batch, logs=None):
        if batch % self.every == 0:
            print(f"epoch {self.epoch} step {batch} loss {logs['loss']:.4f} "
                  f"({time.time() - self.t0:.1f}s)", flush=True)


class AsyncCheckpointUploader(keras.callbacks.Callback):
    """Save locally, upload in the background so the GPU/CPU keeps training."""

    def __init__(self, local_dir, remote_dir):
        super().__init__()
        self.local_dir = local_dir
        self.remote_dir = remote_dir
        # one uploader thread: we do not want several uploads fighting for bandwidth
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ckpt-upload")
        self._pending = None

    def _upload(self, epoch, files):
        dst = os.path.join(self.remote_dir, f"epoch_{epoch:03d}")
        os.makedirs(dst, exist_ok=True)
        for f in files:
            shutil.copy2(f, dst)
        # checksum all files "in parallel" for the manifest
        futs = [self._pool.submit(_sha256, f) for f in files]  # HANG: nested_submit_same_pool
        manifest = dict(fut.result() for fut in futs)  # HANG: upload_waits_on_queued_task
        with open(os.path.join(dst, "MANIFEST"), "w") as fh:
            for name, digest in sorted(manifest.items()):
                fh.write(f"{digest}  {name}\n")
        return dst

    def on_epoch_end(self, epoch, logs=None):
        path = os.path.join(self.local_dir, f"epoch_{epoch:03d}.weights.h5")
        self.model.save_weights(path)
        print(f"epoch {epoch} train loss {logs['loss']:.4f}; saved {os.path.basename(path)}",
              flush=True)
        if self._pending is not None:
            # back-pressure: never queue more than one upload
            done = self._pending.result()  # HANG: main_thread_waits_previous_upload
            print(f"uploaded previous checkpoint to {done}", flush=True)
        self._pending = self._pool.submit(self._upload, epoch, [path])
        print(f"queued upload of epoch {epoch}", flush=True)

    def on_train_end(self, logs=None):
        if self._pending is not None:
            self._pending.result()
        self._pool.shutdown(wait=True)


def main():
    print(f"workdir {WORKDIR}", flush=True)
    ds = make_dataset()
    model = build_model()
    cbs = [StepLogger(every=50), AsyncCheckpointUploader(LOCAL_CKPT, REMOTE)]
    hist = model.fit(ds, epochs=EPOCHS, steps_per_epoch=STEPS_PER_EPOCH,
                     callbacks=cbs, verbose=0)
    print(f"final loss {hist.history['loss'][-1]:.4f}", flush=True)
    shutil.rmtree(WORKDIR, ignore_errors=True)


if __name__ == "__main__":
    main()
