"""Defect classifier for inspection-camera crops: short training epochs on a
sampled subset, full validation set evaluated after every epoch.

Source: https://github.com/tensorflow/tensorflow/issues/36287
("keras freezing at last step in the first epoch": with validation_data the
progress stops at the last training step of epoch 1; without validation_data
it does not. The "freeze" is Keras evaluating the validation set, which prints
nothing until it finishes.)

What happens: each epoch trains for only 24 steps of 32 crops (a few seconds)
and a per-step logger prints every 8 steps. After the last step of the final
epoch (validation_freq=EPOCHS, so validation runs once, at the end) fit() runs
validation over 20480 procedurally rendered crops (tf.data map + convnet
forward pass) with no output at all (verbose=2 prints the epoch line only
after validation). That takes roughly 35-80 s on 2 CPU cores, with the
process busy (100-125% CPU), so the log looks frozen at "step 24/24". The job
is healthy: it then prints the epoch summary and the final accuracy and exits
0.
"""
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import tensorflow as tf
import keras
from keras import layers

SIZE = 64
TRAIN_STEPS = 24
TRAIN_BATCH = 32
VAL_CROPS = 20480
VAL_BATCH = 128
EPOCHS = 2
DEFECTS = ["ok", "scratch", "dent", "stain"]


def render_crop(index, split_seed):
    """Procedurally render one grey-ish crop with a class-specific defect."""
    seed = tf.stack([tf.cast(index, tf.int32), tf.constant(split_seed)])
    label = tf.random.stateless_uniform([], seed, 0, len(DEFECTS), tf.int32)
    noise = tf.random.stateless_normal([SIZE, SIZE, 3], seed + 1, 0.5, 0.08)
    yy, xx = tf.meshgrid(tf.linspace(-1.0, 1.0, SIZE),
                         tf.linspace(-1.0, 1.0, SIZE), indexing="ij")
    cx, cy = tf.unstack(tf.random.stateless_uniform([2], seed + 2, -0.5, 0.5))
    r2 = (xx - cx) ** 2 + (yy - cy) ** 2
    scratch = tf.exp(-((yy - cy) - 0.3 * (xx - cx)) ** 2 * 400.0) * 0.4
    dent = tf.exp(-r2 * 30.0) * -0.3
    stain = tf.cast(r2 < 0.05, tf.float32) * 0.25
    defect = tf.stack([tf.zeros_like(r2), scratch, dent, stain])[label]
    image = tf.clip_by_value(noise + defect[..., None], 0.0, 1.0)
    return image, label


def make_dataset(n, split_seed, batch, training):
    ds = tf.data.Dataset.range(n)
    if training:
        ds = ds.shuffle(n, seed=3)
    ds = ds.map(lambda i: render_crop(i, split_seed),
                num_parallel_calls=tf.data.AUTOTUNE)
    if training:
        ds = ds.map(lambda x, y: (tf.image.random_flip_left_right(x), y))
    return ds.batch(batch).prefetch(tf.data.AUTOTUNE)


def build_model():
    inputs = keras.Input((SIZE, SIZE, 3))
    x = inputs
    for filters in (32, 64, 128):
        x = layers.Conv2D(filters, 3, padding="same", use_bias=False)(x)
        x = layers.BatchNormalization()(x)
        x = layers.Activation("relu")(x)
        x = layers.Conv2D(filters, 3, padding="same", activation="relu")(x)
        x = layers.MaxPooling2D()(x)
    x = layers.GlobalAveragePooling2D()(x)
    outputs = layers.Dense(len(DEFECTS), activation="softmax")(x)
    model = keras.Model(inputs, outputs, name="defect_cnn")
    model.compile(optimizer=keras.optimizers.Adam(1e-3),
                  loss="sparse_categorical_crossentropy",
                  metrics=["accuracy"])
    return model


class StepLogger(keras.callbacks.Callback):
    def __init__(self, steps, every):
        super().__init__()
        self.steps = steps
        self.every = every

    def on_epoch_begin(self, epoch, logs=None):
        self.epoch = epoch
        self.t0 = time.time()

    def on_train_batch_end(self, batch, logs=None):
        if (batch + 1) % self.every == 0:
            print(f"epoch {self.epoch + 1} step {batch + 1}/{self.steps} "
                  f"loss={logs['loss']:.4f} ({time.time() - self.t0:.1f}s)",
                  flush=True)


def main():
    t_start = time.time()
    train_ds = make_dataset(TRAIN_STEPS * TRAIN_BATCH, 11,
                            TRAIN_BATCH, training=True)
    val_ds = make_dataset(VAL_CROPS, 29, VAL_BATCH, training=False)
    model = build_model()
    print(f"params={model.count_params()} train_steps={TRAIN_STEPS} "
          f"val_crops={VAL_CROPS}", flush=True)
    # The full validation set is expensive: validate once, after the
    # last epoch.
    history = model.fit(train_ds, validation_data=val_ds,
                        validation_freq=EPOCHS, epochs=EPOCHS, verbose=2,
                        callbacks=[StepLogger(TRAIN_STEPS, every=8)])
    print(f"final val_accuracy={history.history['val_accuracy'][-1]:.3f} "
          f"total {time.time() - t_start:.0f}s", flush=True)


if __name__ == "__main__":
    main()
