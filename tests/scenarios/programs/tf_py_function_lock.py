"""Source: https://github.com/tensorflow/tensorflow/issues/32454 (a tf.py_function inside
dataset.map hangs the program)
Mechanism: the map's tf.py_function looks tokens up in a shared vocabulary under vocab_lock.
The training loop holds vocab_lock for the whole epoch (it grows the vocabulary as it goes) and
asks the dataset for the next element: the py_function, on a tf.data thread, never gets the lock."""

import os
import threading

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

vocab_lock = threading.Lock()
vocab = {f"w{i}": i for i in range(100)}


def lookup(token):
    with vocab_lock:  # HANG: lock
        return np.int64(vocab.get(token.numpy().decode(), 0))


def main() -> None:
    tokens = tf.data.Dataset.from_tensor_slices([f"w{i % 120}" for i in range(1000)])
    ids = tokens.map(lambda t: tf.py_function(lookup, [t], tf.int64)).batch(8)
    total = 0
    print("epoch 0 starting", flush=True)
    with vocab_lock:  # the loop adds unseen tokens to the vocabulary as it goes
        for step, batch in enumerate(ids):  # HANG: next
            total += int(tf.reduce_sum(batch))
            vocab.setdefault(f"w{100 + step}", 100 + step)
            print(f"step {step} total {total}", flush=True)
    print("done", flush=True)


if __name__ == "__main__":
    main()
