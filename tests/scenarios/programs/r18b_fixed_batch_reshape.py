"""Human-activity recognition from 9-axis IMU windows with a small patch
transformer-style encoder (custom Keras layer + model.fit on tf.data).

Source: https://github.com/keras-team/keras/issues/12338
("Batch_size issue when using model.fit on keras custom layers": a custom
layer reshapes its input using the batch size; training works while the
number of samples is a multiple of batch_size and fails on the last batch
otherwise).

What happens: PatchEmbedding.call folds the time axis into patches with
tf.reshape(x, [self.batch_size * n_patches, patch_len * channels]), using the
batch size from the config instead of the dynamic one. The training split
(2560 windows) is a multiple of 64, so the whole first epoch trains fine. The
validation split (664 windows) is not: after epoch 1 Keras runs validation,
and its last batch holds 24 windows, so the reshape fails. model.fit raises
tensorflow InvalidArgumentError ("Graph execution error: Detected at node
.../patch_embedding_1/Reshape ... Input to reshape is a tensor with 27648
values, but the requested shape has 73728") from the validation step; the
origin is the reshape line in PatchEmbedding.call, far from the fit() call.
"""
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")

import numpy as np
import tensorflow as tf
import keras
from keras import layers

CONFIG = {
    "window": 128,
    "channels": 9,
    "patch_len": 16,
    "d_model": 64,
    "heads": 4,
    "batch_size": 64,
    "epochs": 8,
    "lr": 2e-3,
}
ACTIVITIES = ["walking", "upstairs", "downstairs", "sitting", "standing",
              "lying"]


def synth_imu(n, seed):
    """Synthetic accelerometer/gyro/total-acc windows with class-dependent
    gait frequency and orientation."""
    rng = np.random.default_rng(seed)
    t = np.arange(CONFIG["window"]) / 50.0
    y = rng.integers(len(ACTIVITIES), size=n)
    x = np.empty((n, CONFIG["window"], CONFIG["channels"]), np.float32)
    for i, c in enumerate(y):
        f = [1.9, 1.6, 2.2, 0.0, 0.0, 0.0][c]
        amp = [1.0, 0.8, 1.1, 0.05, 0.05, 0.03][c]
        grav = np.array([[0, 0, 1], [0, 0, 1], [0, 0, 1], [0.3, 0, 0.95],
                         [0, 0, 1], [1, 0, 0]][c], np.float32)
        phase = rng.uniform(0, 2 * np.pi, size=3)
        body = amp * np.sin(2 * np.pi * f * t[:, None] + phase)
        gyro = 0.5 * amp * np.cos(2 * np.pi * f * t[:, None] + phase)
        x[i, :, 0:3] = body + rng.normal(0, 0.1, body.shape)
        x[i, :, 3:6] = gyro + rng.normal(0, 0.1, gyro.shape)
        x[i, :, 6:9] = body + grav + rng.normal(0, 0.05, body.shape)
    return x, y.astype(np.int32)


class PatchEmbedding(layers.Layer):
    """Cut each window into non-overlapping patches and project them."""

    def __init__(self, batch_size, patch_len, d_model, **kwargs):
        super().__init__(**kwargs)
        self.batch_size = batch_size
        self.patch_len = patch_len
        self.d_model = d_model

    def build(self, input_shape):
        self.window = int(input_shape[1])
        self.channels = int(input_shape[2])
        self.n_patches = self.window // self.patch_len
        self.proj = layers.Dense(self.d_model, name="proj")
        self.proj.build((None, self.patch_len * self.channels))
        self.pos = self.add_weight(
            name="pos", shape=(self.n_patches, self.d_model),
            initializer=keras.initializers.RandomNormal(stddev=0.02))

    def call(self, x):
        patches = tf.reshape(  # HANG: reshape_with_fixed_batch
            x, [self.batch_size * self.n_patches,
                self.patch_len * self.channels])
        tokens = self.proj(patches)
        tokens = tf.reshape(tokens,
                            [self.batch_size, self.n_patches, self.d_model])
        return tokens + self.pos

    def get_config(self):
        cfg = super().get_config()
        cfg.update(batch_size=self.batch_size, patch_len=self.patch_len,
                   d_model=self.d_model)
        return cfg


def encoder_block(x, heads, d_model):
    h = layers.LayerNormalization()(x)
    h = layers.MultiHeadAttention(heads, d_model // heads)(h, h)
    x = layers.Add()([x, h])
    h = layers.LayerNormalization()(x)
    h = layers.Dense(2 * d_model, activation="gelu")(h)
    h = layers.Dense(d_model)(h)
    return layers.Add()([x, h])


def build_model():
    inputs = keras.Input((CONFIG["window"], CONFIG["channels"]))
    x = PatchEmbedding(CONFIG["batch_size"], CONFIG["patch_len"],
                       CONFIG["d_model"])(inputs)
    for _ in range(2):
        x = encoder_block(x, CONFIG["heads"], CONFIG["d_model"])
    x = layers.GlobalAveragePooling1D()(x)
    x = layers.Dropout(0.1)(x)
    outputs = layers.Dense(len(ACTIVITIES), activation="softmax")(x)
    model = keras.Model(inputs, outputs, name="har_patch_encoder")
    model.compile(
        optimizer=keras.optimizers.AdamW(CONFIG["lr"], weight_decay=1e-4),
        loss="sparse_categorical_crossentropy",
        metrics=["accuracy"])
    return model


def make_ds(x, y, training):
    ds = tf.data.Dataset.from_tensor_slices((x, y))
    if training:
        ds = ds.shuffle(len(x), seed=1, reshuffle_each_iteration=True)
    return ds.batch(CONFIG["batch_size"]).prefetch(tf.data.AUTOTUNE)


class StepLogger(keras.callbacks.Callback):
    def __init__(self, every):
        super().__init__()
        self.every = every

    def on_epoch_begin(self, epoch, logs=None):
        self.epoch = epoch
        self.t0 = time.time()

    def on_train_batch_end(self, batch, logs=None):
        if (batch + 1) % self.every == 0:
            print(f"epoch {self.epoch + 1} step {batch + 1} "
                  f"loss={logs['loss']:.4f} acc={logs['accuracy']:.3f} "
                  f"({time.time() - self.t0:.1f}s)", flush=True)


def main():
    x, y = synth_imu(3224, seed=7)
    n_train = 2560
    x_train, y_train = x[:n_train], y[:n_train]
    x_val, y_val = x[n_train:], y[n_train:]
    mean = x_train.mean(axis=(0, 1), keepdims=True)
    std = x_train.std(axis=(0, 1), keepdims=True) + 1e-6
    x_train = (x_train - mean) / std
    x_val = (x_val - mean) / std
    print(f"train windows: {len(x_train)}, val windows: {len(x_val)}",
          flush=True)

    model = build_model()
    print(f"model params: {model.count_params()}", flush=True)
    ckpt_dir = os.path.join(os.environ.get("TMPDIR", "/tmp"), "har_ckpt")
    os.makedirs(ckpt_dir, exist_ok=True)
    history = model.fit(
        make_ds(x_train, y_train, training=True),
        validation_data=make_ds(x_val, y_val, training=False),
        epochs=CONFIG["epochs"],
        verbose=2,
        callbacks=[
            StepLogger(every=10),
            keras.callbacks.ModelCheckpoint(
                os.path.join(ckpt_dir, "best.weights.h5"),
                monitor="val_accuracy", save_best_only=True,
                save_weights_only=True),
        ],
    )
    print("best val acc:", max(history.history["val_accuracy"]))


if __name__ == "__main__":
    main()
