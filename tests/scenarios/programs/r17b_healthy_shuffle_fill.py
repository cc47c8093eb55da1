"""Keyword-spotting model whose first epoch sits silently while tf.data fills
a whole-dataset shuffle buffer.

Modelled on https://github.com/daniel-kukiela/nmt-chatbot/issues/63
("Stuck at Shuffle buffer filled": training looked stuck right before the
first step for a long time, CPU busy, and later turned out to be simply
slow).

The pipeline synthesises and featurises every clip (multi-resolution STFT
log-mel features) and then shuffles with buffer_size equal to the dataset
size, so no batch of the first epoch can be produced until every clip has
been featurised (and cached).
TF's "Filling up shuffle buffer" log lines are hidden with
TF_CPP_MIN_LOG_LEVEL, and fit() runs with verbose=2, so nothing is printed
for a long stretch while both cores are busy.  After the buffer is full and
cached, the epochs run quickly and the job exits 0.
"""
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import tensorflow as tf
import keras
from keras import layers

N_CLIPS = int(os.environ.get("KWS_CLIPS", "14000"))
SR = 16000
N_WORDS = 12
N_MELS = 40
BATCH = 64
EPOCHS = 4
MEL = tf.signal.linear_to_mel_weight_matrix(N_MELS, 257, SR, 20.0, 7600.0)


def synth_clip(idx):
    label = idx % N_WORDS
    seed = tf.stack([idx, tf.constant(7, tf.int64)])
    t = tf.range(SR, dtype=tf.float32) / SR
    f0 = 200.0 + 60.0 * tf.cast(label, tf.float32)
    wave = tf.sin(2.0 * 3.14159 * f0 * t) * tf.exp(-3.0 * t)
    wave += 0.3 * tf.random.stateless_normal([SR], seed=seed)
    return wave, label


def featurize(wave, label):
    feats = []
    for frame_length, frame_step in ((512, 160), (400, 128), (320, 100)):
        spec = tf.abs(tf.signal.stft(wave, frame_length, frame_step, fft_length=512))
        mel = tf.math.log(tf.matmul(spec, MEL) + 1e-6)
        feats.append(tf.image.resize(mel[..., None], (98, N_MELS))[..., 0])
    x = tf.stack(feats, axis=-1)
    for _ in range(16):
        x = tf.nn.avg_pool2d(x[None], 3, 1, "SAME")[0] * 0.5 + x * 0.5
    return x, label


def make_dataset():
    ds = tf.data.Dataset.range(N_CLIPS)
    ds = ds.map(synth_clip, num_parallel_calls=2)
    ds = ds.map(featurize, num_parallel_calls=2)
    ds = ds.cache()
    ds = ds.shuffle(N_CLIPS, reshuffle_each_iteration=True)
    return ds.batch(BATCH).prefetch(2)


def build_model():
    inp = keras.Input((98, N_MELS, 3))
    x = layers.MaxPooling2D((2, 2))(inp)
    x = layers.Conv2D(16, 3, activation="relu", padding="same")(x)
    x = layers.MaxPooling2D()(x)
    x = layers.Conv2D(32, 3, activation="relu", padding="same")(x)
    x = layers.GlobalAveragePooling2D()(x)
    out = layers.Dense(N_WORDS, activation="softmax")(x)
    return keras.Model(inp, out)


def main():
    t0 = time.time()
    print(f"building pipeline for {N_CLIPS} clips", flush=True)
    train_ds = make_dataset()
    model = build_model()
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    model.fit(train_ds, epochs=EPOCHS, verbose=2)
    print(f"done in {time.time() - t0:.0f}s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
