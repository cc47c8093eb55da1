"""Spectrogram classifier trained with Keras fit() on a tf.data pipeline that
loads per-clip .npy feature files through tf.numpy_function.

Modelled on https://github.com/tensorflow/tensorflow/issues/42713
(UnknownError thrown while iterating a batched, mapped tf.data.Dataset whose
map uses tf.numpy_function).

One of the cached feature files was left truncated by an interrupted
feature-extraction run.  np.load() raises inside the numpy_function, which
executes on a tf.data worker thread; TensorFlow converts it into an
UnknownError/InvalidArgumentError that surfaces many steps later from
model.fit() in the main thread, far from the line that actually failed.
"""
import os

import numpy as np
import tensorflow as tf
import keras
from keras import layers

FEAT_DIR = "/tmp/r17b_speech_feats"
N_CLIPS = 600
N_MELS = 40
FRAMES = 98
N_CLASSES = 8
BATCH = 32


def extract_features():
    os.makedirs(FEAT_DIR, exist_ok=True)
    rng = np.random.default_rng(3)
    paths, labels = [], []
    for i in range(N_CLIPS):
        label = int(rng.integers(N_CLASSES))
        path = os.path.join(FEAT_DIR, f"clip_{i:05d}_{label}.npy")
        mel = rng.normal(size=(FRAMES, N_MELS)).astype("float32")
        mel[:, label * 5:(label + 1) * 5] += 2.0
        np.save(path, mel)
        paths.append(path)
        labels.append(label)
    victim = paths[437]
    with open(victim, "rb") as f:
        blob = f.read()
    with open(victim, "wb") as f:
        f.write(blob[: len(blob) // 3])
    return paths, labels


def read_clip(path):
    mel = np.load(path.decode())  # HANG: bad_record_load
    mel = (mel - mel.mean()) / (mel.std() + 1e-6)
    return mel.astype("float32")


def make_dataset(paths, labels, training):
    ds = tf.data.Dataset.from_tensor_slices((paths, labels))
    if training:
        ds = ds.shuffle(len(paths), seed=11)

    def load(path, label):
        mel = tf.numpy_function(read_clip, [path], tf.float32)
        mel.set_shape((FRAMES, N_MELS))
        return mel[..., None], label

    return ds.map(load, num_parallel_calls=2).batch(BATCH).prefetch(1)


def build_model():
    inp = keras.Input((FRAMES, N_MELS, 1))
    x = layers.Conv2D(16, 3, activation="relu")(inp)
    x = layers.MaxPooling2D()(x)
    x = layers.Conv2D(32, 3, activation="relu")(x)
    x = layers.GlobalAveragePooling2D()(x)
    x = layers.Dropout(0.2)(x)
    out = layers.Dense(N_CLASSES, activation="softmax")(x)
    return keras.Model(inp, out)


def main():
    paths, labels = extract_features()
    split = int(0.85 * len(paths))
    train_ds = make_dataset(paths[:split], labels[:split], training=True)
    val_ds = make_dataset(paths[split:], labels[split:], training=False)
    model = build_model()
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    model.fit(train_ds, validation_data=val_ds, epochs=4, verbose=2,
              callbacks=[keras.callbacks.EarlyStopping(patience=2, restore_best_weights=True)])
    model.save("/tmp/r17b_speech_feats_model.keras")
    print("saved")


if __name__ == "__main__":
    main()
