"""Keras `fit` with a callback that logs each batch's metrics through a shared writer. A
background uploader takes the writer's lock to flush, then waits (lock still held) until the
callback says the epoch ended; the callback, at its next batch, waits for the lock. The fit
prints nothing (verbose=0): only its batch ends show it was training."""

import os
import threading

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras
import numpy as np

writer_lock = threading.Lock()
epoch_ended = threading.Event()
lines: list[str] = []


def upload() -> None:
    while True:
        with writer_lock:
            epoch_ended.wait()  # HANG: held-wait
            epoch_ended.clear()
            lines.clear()


class MetricsLog(keras.callbacks.Callback):
    def on_train_batch_end(self, batch, logs=None):
        if batch == 3:
            threading.Thread(target=upload, name="uploader", daemon=True).start()
        with writer_lock:  # HANG: lock
            lines.append(f"{batch} {logs}")

    def on_epoch_end(self, epoch, logs=None):
        epoch_ended.set()


model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
model.compile(optimizer="sgd", loss="mse")
x, y = np.ones((256, 4), "float32"), np.ones((256, 1), "float32")
print("fitting", flush=True)
model.fit(x, y, batch_size=8, epochs=3, verbose=0, callbacks=[MetricsLog()])
print("done")
