"""Source: https://github.com/tensorflow/tensorflow/issues/37029 (out-of-memory in a Keras job;
ResourceExhaustedError: OOM when allocating tensor with shape ...)
Mechanism: an embedding table sized from a vocabulary count read with the wrong column (2**28
rows instead of 2**14) is built on the CPU: 2**28 x 1024 float32 is 1 TiB. The allocation fails
with ResourceExhaustedError (OOM when allocating tensor) and the job fails at model build."""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

EMBED_DIM = 1024


def vocab_size_from_header() -> int:
    header = {"num_tokens": 2**14, "num_bytes": 2**28}
    return header["num_bytes"]  # the wrong column: bytes, not tokens


def main() -> None:
    x = np.random.randint(0, 2**14, size=(64, 10))
    y = np.random.rand(64, 1).astype("float32")
    small = tf.keras.Sequential([tf.keras.Input((10,)), tf.keras.layers.Embedding(2**14, 16), tf.keras.layers.GlobalAveragePooling1D(), tf.keras.layers.Dense(1)])
    small.compile(optimizer="sgd", loss="mse")
    small.fit(x, y, epochs=1, verbose=2)
    vocab = vocab_size_from_header()
    table = tf.Variable(tf.zeros([vocab, EMBED_DIM]))  # HANG: alloc
    print(f"table {table.shape}", flush=True)


if __name__ == "__main__":
    main()
