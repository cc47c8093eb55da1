"""Keras keyword-spotting model trained on log-mel features from a cached tf.data pipeline.

The job synthesises 4-second 16 kHz audio clips, turns each clip into a log-mel
spectrogram (STFT with a small hop, mel projection, log, time pooling) inside a
parallel tf.data map, caches the features in memory with .cache(), and trains a
small Conv1D classifier with model.fit(verbose=0); progress is only logged by a
callback at the end of each epoch.

Mechanism (healthy): the first epoch has to run the expensive featurisation for
every clip while it fills the cold cache, so after "starting fit" the job prints
nothing for a long stretch (roughly 20-35 s on 2 cores) while both cores are
busy in tf.data.  Once the cache is warm, epochs 2..N take about a second each
and the job finishes normally with exit code 0.  It is not hung.

From https://github.com/keras-team/keras/issues/6503 ("First training epoch
slow?": when training with fit_generator the first epoch takes much longer than
the following ones - 3943 s versus about 240 s - because the first pass pays the
data loading/preprocessing cost that later epochs reuse).
"""
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import tensorflow as tf
import keras

SR = 16000
CLIP_SECONDS = 4
NUM_CLIPS = 5000
NUM_CLASSES = 8
N_MELS = 64
POOLED_FRAMES = 96
BATCH = 64
EPOCHS = 6

MEL = tf.signal.linear_to_mel_weight_matrix(N_MELS, 513, SR, 20.0, 8000.0)


def synth_clip(idx):
    seed = tf.stack([idx, tf.constant(1234, tf.int64)])
    label = tf.cast(idx % NUM_CLASSES, tf.int32)
    t = tf.range(SR * CLIP_SECONDS, dtype=tf.float32) / SR
    f0 = 180.0 + 60.0 * tf.cast(label, tf.float32)
    vibrato = 3.0 * tf.sin(2.0 * 3.14159 * 5.0 * t)
    wav = tf.sin(2.0 * 3.14159 * (f0 + vibrato) * t)
    wav += 0.4 * tf.random.stateless_normal([SR * CLIP_SECONDS], seed=seed)
    return wav, label


def log_mel(wav, label):
    spec = tf.abs(tf.signal.stft(wav, frame_length=1024, frame_step=64, fft_length=1024))
    mel = tf.math.log(tf.matmul(spec * spec, MEL) + 1e-6)
    mel = tf.image.resize(mel[None, :, :, None], [POOLED_FRAMES, N_MELS], method="area")[0, :, :, 0]
    mel = (mel - tf.reduce_mean(mel)) / (tf.math.reduce_std(mel) + 1e-6)
    return mel, label


def make_dataset():
    ds = tf.data.Dataset.range(NUM_CLIPS)
    ds = ds.map(synth_clip, num_parallel_calls=tf.data.AUTOTUNE)
    ds = ds.map(log_mel, num_parallel_calls=tf.data.AUTOTUNE)
    ds = ds.cache()
    ds = ds.shuffle(NUM_CLIPS, seed=0)
    return ds.batch(BATCH).prefetch(tf.data.AUTOTUNE)


def build_model():
    inp = keras.Input(shape=(POOLED_FRAMES, N_MELS))
    x = keras.layers.Conv1D(64, 5, padding="same", activation="relu")(inp)
    x = keras.layers.MaxPooling1D(2)(x)
    x = keras.layers.Conv1D(64, 5, padding="same", activation="relu")(x)
    x = keras.layers.GlobalAveragePooling1D()(x)
    x = keras.layers.Dense(64, activation="relu")(x)
    out = keras.layers.Dense(NUM_CLASSES)(x)
    model = keras.Model(inp, out)
    model.compile(
        optimizer=keras.optimizers.Adam(1e-3),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    return model


class EpochLogger(keras.callbacks.Callback):
    def on_train_begin(self, logs=None):
        self.t0 = time.time()

    def on_epoch_end(self, epoch, logs=None):
        print(
            f"epoch {epoch + 1}/{EPOCHS} loss={logs['loss']:.4f} "
            f"acc={logs['accuracy']:.3f} t={time.time() - self.t0:.1f}s",
            flush=True,
        )


def main():
    print(f"building feature pipeline for {NUM_CLIPS} clips", flush=True)
    ds = make_dataset()
    model = build_model()
    print("starting fit (features are computed and cached during epoch 1)", flush=True)
    model.fit(ds, epochs=EPOCHS, verbose=0, callbacks=[EpochLogger()])
    print("training finished", flush=True)


if __name__ == "__main__":
    main()
