"""Source: https://github.com/keras-team/keras/issues/8595 (a Keras fit that looks frozen between
epochs; here it is only slow)
Mechanism (healthy): model.fit over a keras PyDataset whose __getitem__ takes 0.6 s (heavy
decoding), verbose=2 so only one line per epoch is printed (every ~5 s). Slow but steady; the
job ends after 4 epochs."""

import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import keras  # noqa: E402


class SlowImages(keras.utils.PyDataset):
    def __len__(self):
        return 8

    def __getitem__(self, index):
        time.sleep(0.6)  # decoding a large image batch
        rng = np.random.default_rng(index)
        x = rng.random((16, 8), dtype=np.float32)
        return x, x.sum(axis=1, keepdims=True)


def main() -> None:
    model = tf.keras.Sequential([tf.keras.Input((8,)), tf.keras.layers.Dense(16, activation="relu"), tf.keras.layers.Dense(1)])
    model.compile(optimizer="adam", loss="mse")
    model.fit(SlowImages(), epochs=4, verbose=2)
    print("done", flush=True)


if __name__ == "__main__":
    main()
