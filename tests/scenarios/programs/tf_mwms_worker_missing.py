"""Source: https://github.com/tensorflow/tensorflow/issues/39922 (MultiWorkerMirroredStrategy
fails to start with TF_CONFIG: "I had to run another instance of the script with index 1")
Mechanism: TF_CONFIG names two workers on loopback, but only worker 0 is launched. Worker 0
blocks creating MultiWorkerMirroredStrategy, waiting in the coordination service for worker 1
to connect; no training step ever runs."""

import json
import os

os.environ["TF_CONFIG"] = json.dumps(
    {
        "cluster": {"worker": ["127.0.0.1:29901", "127.0.0.1:29902"]},
        "task": {"type": "worker", "index": int(os.environ.get("WORKER_INDEX", "0"))},
    }
)
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402


def main() -> None:
    print("creating MultiWorkerMirroredStrategy", flush=True)
    strategy = tf.distribute.MultiWorkerMirroredStrategy()  # HANG: strategy
    with strategy.scope():
        model = tf.keras.Sequential([tf.keras.Input((8,)), tf.keras.layers.Dense(1)])
        model.compile(optimizer="sgd", loss="mse")
    x = np.random.rand(256, 8).astype("float32")
    y = x.sum(axis=1, keepdims=True)
    model.fit(x, y, batch_size=32, epochs=2, verbose=2)
    print("done", flush=True)


if __name__ == "__main__":
    main()  # only worker 0 is started: worker 1's job was never submitted
