"""Source: https://github.com/tensorflow/tensorboard/issues/6167 (EventFileWriter can hang on an
exception in its background thread: writes block on the full queue for ever)
Mechanism: a custom Keras callback hands every batch's logs to a background writer thread
through a bounded queue, the way summary writers do. A per-class F1 metric
(`average=None`) makes one log value a vector; the writer thread dies on `float()` of it
(traceback on stderr), and after 16 more batches the callback's `put()` blocks in
`on_train_batch_end` on the full queue that nobody drains."""

import os
import queue
import threading

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import keras
import numpy as np


class MetricsWriter(keras.callbacks.Callback):
    """Writes metrics to a CSV file from a background thread so that training never waits on
    disk I/O."""

    def __init__(self, path: str, max_queue: int = 16):
        super().__init__()
        self.path = path
        self.queue: queue.Queue = queue.Queue(maxsize=max_queue)
        self.thread = threading.Thread(target=self._run, name="metrics-writer", daemon=True)
        self.step = 0

    def _run(self) -> None:
        with open(self.path, "w") as f:
            while True:
                step, logs = self.queue.get()
                values = {k: float(v) for k, v in sorted(logs.items())}  # HANG: float
                row = ",".join(f"{k}={v:.5f}" for k, v in values.items())
                f.write(f"{step},{row}\n")

    def on_train_begin(self, logs=None):
        self.thread.start()

    def on_train_batch_end(self, batch, logs=None):
        self.step += 1
        self.queue.put((self.step, dict(logs or {})))  # HANG: put
        if self.step % 10 == 0:
            print(f"step {self.step} loss {float(logs['loss']):.4f}", flush=True)


def main() -> None:
    rng = np.random.default_rng(0)
    x = rng.random((4096, 20), dtype=np.float32)
    y = keras.utils.to_categorical((x[:, :3].argmax(axis=1)), 3)
    model = keras.Sequential(
        [
            keras.Input((20,)),
            keras.layers.Dense(32, activation="relu"),
            keras.layers.Dense(3, activation="softmax"),
        ]
    )
    model.compile(
        optimizer="adam",
        loss="categorical_crossentropy",
        metrics=["accuracy", keras.metrics.F1Score(average=None, name="f1")],
    )
    writer = MetricsWriter(os.path.join("/tmp", f"metrics-{os.getpid()}.csv"))
    model.fit(x, y, batch_size=32, epochs=5, verbose=0, callbacks=[writer])
    print("done", flush=True)


if __name__ == "__main__":
    main()
