"""Keras fit never leaves the first validation pass: validation_steps == 0 on a repeated dataset.

Source: https://github.com/tensorflow/tensorflow/issues/39465
  "model.fit hangs if validation_steps is zero" -- the reporter computed
  VALIDATION_STEPS = len(valid) // BATCH_SIZE, which came out as 0, and model.fit
  "suspends execution or hangs after training first epoch".

What happens:
  A vibration-sensor classifier is trained with model.fit on a tf.data pipeline.
  The hold-out set is small (40 windows) and, as many scripts do to avoid the
  "your input ran out of data" warning across epochs, both datasets are
  `.repeat()`ed and the step counts are computed by integer division.
  40 // 64 == 0, so validation_steps=0 is passed. Keras treats a falsy
  validation_steps as "no limit" (None) and iterates the validation dataset
  until it is exhausted -- but it was repeated, so it never is.  After epoch 1
  has logged its training steps, fit() enters evaluation and spins forever in
  Keras' evaluate loop (one core busy, no output, no error, no end).  Nothing in
  the user's code blocks; the culprit is the zero step count fed to fit().
"""
import os
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np
import tensorflow as tf
import keras

# shared build box: keep TF to a small thread budget
tf.config.threading.set_intra_op_parallelism_threads(1)
tf.config.threading.set_inter_op_parallelism_threads(2)

WINDOW = 128
CHANNELS = 3
N_CLASSES = 4
BATCH = 64
EPOCHS = 6
LOG_EVERY = 8

workdir = tempfile.mkdtemp(prefix="r19b_vib_")


def make_windows(n, seed):
    """Synthetic accelerometer windows: class = dominant vibration frequency."""
    rng = np.random.default_rng(seed)
    t = np.linspace(0.0, 1.0, WINDOW, dtype=np.float32)
    y = rng.integers(0, N_CLASSES, size=n)
    freqs = np.array([3.0, 7.0, 13.0, 21.0], dtype=np.float32)[y]
    phase = rng.uniform(0, 2 * np.pi, size=(n, CHANNELS)).astype(np.float32)
    x = np.sin(2 * np.pi * freqs[:, None, None] * t[None, :, None] + phase[:, None, :])
    x += 0.4 * rng.standard_normal(x.shape).astype(np.float32)
    return x.astype(np.float32), y.astype(np.int32)


x_train, y_train = make_windows(6144, seed=1)
x_val, y_val = make_windows(40, seed=2)          # small hold-out from a second rig
np.savez(os.path.join(workdir, "val.npz"), x=x_val, y=y_val)
print(f"train windows {len(x_train)}  val windows {len(x_val)}  -> {workdir}", flush=True)

train_ds = (tf.data.Dataset.from_tensor_slices((x_train, y_train))
            .shuffle(2048, seed=0).batch(BATCH, drop_remainder=True)
            .repeat().prefetch(2))
val_ds = (tf.data.Dataset.from_tensor_slices((x_val, y_val))
          .batch(BATCH).repeat().prefetch(2))     # HANG: repeated_val_dataset

steps_per_epoch = len(x_train) // BATCH
validation_steps = len(x_val) // BATCH           # HANG: validation_steps_zero (40 // 64 == 0)
print(f"steps_per_epoch={steps_per_epoch} validation_steps={validation_steps}", flush=True)


def build_model():
    inp = keras.Input((WINDOW, CHANNELS))
    h = keras.layers.Conv1D(32, 7, padding="same", activation="relu")(inp)
    h = keras.layers.MaxPooling1D(2)(h)
    h = keras.layers.Conv1D(64, 5, padding="same", activation="relu")(h)
    h = keras.layers.MaxPooling1D(2)(h)
    h = keras.layers.Conv1D(64, 3, padding="same", activation="relu")(h)
    h = keras.layers.GlobalAveragePooling1D()(h)
    h = keras.layers.Dense(64, activation="relu")(h)
    out = keras.layers.Dense(N_CLASSES)(h)
    return keras.Model(inp, out)


class StepLogger(keras.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.t0 = time.time()
        self.epoch = 0

    def on_epoch_begin(self, epoch, logs=None):
        self.epoch = epoch

    def on_train_batch_end(self, batch, logs=None):
        if batch % LOG_EVERY == 0:
            print(f"epoch {self.epoch} step {batch} loss {logs['loss']:.4f} "
                  f"acc {logs['accuracy']:.3f} ({time.time() - self.t0:.1f}s)", flush=True)

    def on_epoch_end(self, epoch, logs=None):
        print(f"epoch {epoch} done: val_loss {logs.get('val_loss', float('nan')):.4f} "
              f"val_acc {logs.get('val_accuracy', float('nan')):.3f}", flush=True)
        self.model.save_weights(os.path.join(workdir, f"vib_e{epoch}.weights.h5"))


model = build_model()
model.compile(optimizer=keras.optimizers.Adam(1e-3),
              loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
              metrics=["accuracy"])

print("start training", flush=True)
history = model.fit(train_ds, epochs=EPOCHS, steps_per_epoch=steps_per_epoch,
                    validation_data=val_ds, validation_steps=validation_steps,  # HANG: fit_with_zero_val_steps
                    callbacks=[StepLogger()], verbose=0)
print("training finished", history.history["val_accuracy"][-1], flush=True)
