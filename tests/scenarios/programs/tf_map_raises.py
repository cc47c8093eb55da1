"""Source: https://github.com/tensorflow/tensorflow/issues/33281 (an exception raised inside the
tf.data pipeline surfaces as InvalidArgumentError from model.fit)
Mechanism: a CSV parser wrapped in tf.py_function and mapped over a TextLineDataset raises
ValueError on a malformed line (record 150); tf.data re-raises it from model.fit as an
InvalidArgumentError and the job fails in its first epoch."""

import os
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402


def parse_line(line):
    text = line.numpy().decode()
    fields = text.split(",")
    if len(fields) != 5:
        raise ValueError(f"malformed record {text!r}: {len(fields)} fields")  # HANG: raise
    return np.array(fields[:4], np.float32), np.float32(fields[4])


def main() -> None:
    path = os.path.join(tempfile.mkdtemp(), "train.csv")
    with open(path, "w") as f:
        for i in range(200):
            f.write("1,2,3\n" if i == 150 else f"{i % 7},{i % 5},{i % 3},{i % 2},{i % 4}\n")
    ds = tf.data.TextLineDataset(path).map(
        lambda line: tf.py_function(parse_line, [line], (tf.float32, tf.float32))
    )
    ds = ds.map(lambda x, y: (tf.ensure_shape(x, (4,)), tf.ensure_shape(y, ()))).batch(16)
    model = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    model.fit(ds, epochs=3, verbose=2)  # HANG: fit
    print("done", flush=True)


if __name__ == "__main__":
    main()
