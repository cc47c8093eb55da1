"""Source: https://github.com/keras-team/keras/issues/10340 (fit_generator deadlocks after some
epochs when callbacks and background threads share state)
Mechanism: a Keras callback appends each batch's loss under metrics_lock, then takes upload_lock
to queue it; a background uploader thread takes upload_lock, then metrics_lock to snapshot the
metrics. Opposite lock order: after a few batches the main thread and the uploader deadlock."""

import os
import threading
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

metrics_lock = threading.Lock()
upload_lock = threading.Lock()
metrics: list = []
outbox: list = []


class MetricsLogger(tf.keras.callbacks.Callback):
    def on_train_batch_end(self, batch, logs=None):
        with metrics_lock:
            metrics.append(float(logs["loss"]))
            time.sleep(0.02)
            with upload_lock:  # HANG: callback
                outbox.append(metrics[-1])


def uploader() -> None:
    while True:
        with upload_lock:
            time.sleep(0.02)
            with metrics_lock:  # HANG: uploader
                snapshot = list(metrics)
        outbox.clear()
        print(f"uploaded {len(snapshot)} metrics", flush=True)
        time.sleep(0.1)


def main() -> None:
    threading.Thread(target=uploader, daemon=True, name="uploader").start()
    x = np.random.rand(2048, 8).astype("float32")
    y = x.sum(axis=1, keepdims=True)
    model = tf.keras.Sequential([tf.keras.Input((8,)), tf.keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    model.fit(x, y, batch_size=16, epochs=5, verbose=2, callbacks=[MetricsLogger()])
    print("done", flush=True)


if __name__ == "__main__":
    main()
