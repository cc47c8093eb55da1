"""Land-cover tile classifier trained with a Keras PyDataset that decodes and
augments PNG tiles with TensorFlow image ops, fed through process workers.

Source: https://github.com/tensorflow/tensorflow/issues/35317
("Slicing tensor within a keras.utils.Sequence with multiprocessing=True hangs
fit_generator": hangs forever, no error, no CPU use; fine with
use_multiprocessing=False).

What happens: the PyDataset is probed in the parent (shape inference and a
preview batch), so TensorFlow's eager runtime and its intra-op thread pool are
already up. With use_multiprocessing=True Keras forks a multiprocessing.Pool
from a background thread of this multi-threaded process. In each forked worker
__getitem__ calls tf.io.decode_png / tf.image.resize / tf.cast on a whole
batch; those kernels shard their work onto the intra-op thread pool, whose
threads do not exist in the child, so every worker blocks forever on a futex.
The tf.data thread that runs Keras' enqueuer generator waits in
AsyncResult.get() with no timeout, the training step waits in IteratorGetNext,
and nothing is printed after "Epoch 1/6". All processes sleep (0% CPU).
"""
import ctypes
import os
import signal
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")

import numpy as np
import tensorflow as tf
import keras
from keras import layers

TILE = 128
INPUT = 96
CLASSES = ["water", "forest", "urban", "cropland", "bare"]
BATCH = 32


def write_tiles(root, n_tiles, seed=0):
    """Render synthetic RGB tiles to PNG files, one sub-folder per class."""
    rng = np.random.default_rng(seed)
    paths, labels = [], []
    yy, xx = np.mgrid[0:TILE, 0:TILE]
    for i in range(n_tiles):
        c = int(rng.integers(len(CLASSES)))
        base = rng.normal(60 + 35 * c, 12, size=(TILE, TILE, 3))
        freq = 0.05 + 0.04 * c
        pattern = 40 * np.sin(freq * xx + rng.uniform(0, 6)) * np.cos(freq * yy)
        img = np.clip(base + pattern[..., None], 0, 255).astype(np.uint8)
        d = os.path.join(root, CLASSES[c])
        os.makedirs(d, exist_ok=True)
        p = os.path.join(d, f"tile_{i:05d}.png")
        tf.io.write_file(p, tf.io.encode_png(img))
        paths.append(p)
        labels.append(c)
    return np.array(paths), np.array(labels, dtype=np.int32)


class TileSequence(keras.utils.PyDataset):
    def __init__(self, paths, labels, batch_size, augment, **kwargs):
        super().__init__(**kwargs)
        self.paths = paths
        self.labels = labels
        self.batch_size = batch_size
        self.augment = augment
        self.order = np.arange(len(paths))
        self._owner_pid = os.getpid()
        self._initialised_pid = None

    def __len__(self):
        return int(np.ceil(len(self.paths) / self.batch_size))

    def _worker_setup(self):
        # Decode workers must not outlive the trainer if it is killed.
        pid = os.getpid()
        if pid != self._owner_pid and self._initialised_pid != pid:
            libc = ctypes.CDLL("libc.so.6", use_errno=True)
            libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
            self._initialised_pid = pid

    def __getitem__(self, idx):
        self._worker_setup()
        sel = self.order[idx * self.batch_size:(idx + 1) * self.batch_size]
        raw = [tf.io.decode_png(tf.io.read_file(p), channels=3)  # HANG: worker_tf_op_after_fork
               for p in self.paths[sel]]
        images = tf.cast(tf.stack(raw), tf.float32) / 255.0  # HANG: worker_stack_after_fork
        images = tf.image.resize(images, (INPUT, INPUT), method="bicubic")  # HANG: worker_resize_after_fork
        if self.augment:
            images = tf.image.random_flip_left_right(images)
            images = tf.image.random_flip_up_down(images)
            images = tf.image.random_brightness(images, 0.1)
        images = tf.clip_by_value(images, 0.0, 1.0)
        return images.numpy(), self.labels[sel]

    def on_epoch_end(self):
        if self.augment:
            np.random.shuffle(self.order)


def build_model():
    inputs = keras.Input((INPUT, INPUT, 3))
    x = layers.Conv2D(24, 3, padding="same", activation="relu")(inputs)
    x = layers.MaxPooling2D()(x)
    x = layers.Conv2D(48, 3, padding="same", activation="relu")(x)
    x = layers.MaxPooling2D()(x)
    x = layers.Conv2D(64, 3, padding="same", activation="relu")(x)
    x = layers.GlobalAveragePooling2D()(x)
    x = layers.Dropout(0.2)(x)
    outputs = layers.Dense(len(CLASSES), activation="softmax")(x)
    model = keras.Model(inputs, outputs, name="landcover_cnn")
    model.compile(optimizer=keras.optimizers.Adam(1e-3),
                  loss="sparse_categorical_crossentropy",
                  metrics=["accuracy"])
    return model


class EpochTimer(keras.callbacks.Callback):
    def on_epoch_begin(self, epoch, logs=None):
        self.t0 = time.time()

    def on_epoch_end(self, epoch, logs=None):
        print(f"  epoch {epoch + 1} took {time.time() - self.t0:.1f}s",
              flush=True)


def main():
    root = tempfile.mkdtemp(prefix="landcover_")
    t0 = time.time()
    paths, labels = write_tiles(root, 640)
    split = int(0.8 * len(paths))
    print(f"wrote {len(paths)} tiles to {root} in {time.time() - t0:.1f}s",
          flush=True)

    train_seq = TileSequence(paths[:split], labels[:split], BATCH, augment=True,
                             workers=2, use_multiprocessing=True,
                             max_queue_size=8)
    val_seq = TileSequence(paths[split:], labels[split:], BATCH, augment=False,
                           workers=2, use_multiprocessing=True,
                           max_queue_size=8)

    xb, yb = train_seq[0]
    print(f"preview batch: x={xb.shape} {xb.dtype} "
          f"range=({xb.min():.2f}, {xb.max():.2f}) y={np.bincount(yb)}",
          flush=True)

    model = build_model()
    model.summary(print_fn=lambda s, **kw: None)
    print(f"training on {split} tiles, validating on {len(paths) - split}",
          flush=True)
    model.fit(train_seq, validation_data=val_seq, epochs=6, verbose=2,  # HANG: fit_waits_for_batch
              callbacks=[EpochTimer()])
    model.save(os.path.join(root, "landcover_cnn.keras"))
    print("done", flush=True)


if __name__ == "__main__":
    main()
