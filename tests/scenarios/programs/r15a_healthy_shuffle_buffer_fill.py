"""Source: https://github.com/tensorflow/tensorflow/issues/30646 ("Filling up shuffle buffer"
before the beginning of every epoch: training sits there before each epoch)
Mechanism: a keyword-spotting model trains with `fit` on a tf.data pipeline that synthesises a
clip per example, computes its log-spectrogram in `map`, and only then shuffles with a buffer
as large as the epoch. Before each epoch's first batch the pipeline fills the whole shuffle
buffer, so every epoch starts with a long silent stretch of busy input threads; then the epoch
itself is quick. Healthy: it finishes."""

import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import keras
import tensorflow as tf

CLIPS = 8000
SAMPLES = 16000


def make_example(i):
    seed = tf.stack([i, tf.constant(7, tf.int64)])
    label = tf.cast(i % 4, tf.int32)
    freq = 200.0 + 150.0 * tf.cast(label, tf.float32)
    t = tf.range(SAMPLES, dtype=tf.float32) / 16000.0
    noise = tf.random.stateless_normal([SAMPLES], seed=seed, stddev=0.3)
    wav = tf.sin(2.0 * 3.14159 * freq * t) + noise
    spec = tf.abs(tf.signal.stft(wav, frame_length=400, frame_step=160, fft_length=512))
    spec = tf.math.log(spec[:, :64] + 1e-6)
    return spec, label


class EpochTimer(keras.callbacks.Callback):
    def on_epoch_begin(self, epoch, logs=None):
        self.t0 = time.time()
        print(f"epoch {epoch}: start", flush=True)

    def on_epoch_end(self, epoch, logs=None):
        print(
            f"epoch {epoch}: loss {logs['loss']:.4f} acc {logs['accuracy']:.3f} "
            f"({time.time() - self.t0:.1f}s)",
            flush=True,
        )


def main() -> None:
    ds = (
        tf.data.Dataset.range(CLIPS)
        .map(make_example, num_parallel_calls=tf.data.AUTOTUNE)
        .shuffle(buffer_size=CLIPS)  # the whole epoch is decoded before the first batch
        .batch(64)
        .prefetch(2)
    )
    model = keras.Sequential(
        [
            keras.Input((98, 64)),
            keras.layers.Conv1D(32, 5, strides=2, activation="relu"),
            keras.layers.GlobalAveragePooling1D(),
            keras.layers.Dense(4, activation="softmax"),
        ]
    )
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    model.fit(ds, epochs=3, verbose=0, callbacks=[EpochTimer()])
    print("done", flush=True)


if __name__ == "__main__":
    main()
