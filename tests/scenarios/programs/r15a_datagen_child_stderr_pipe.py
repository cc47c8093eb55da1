"""Source: https://github.com/tensorflow/models/pull/4989 ("Fix bug where
data_async_generation.py would freeze": the NCF trainer redirected the generator's stderr to a
pipe it never read)
Mechanism: a Keras trainer starts an asynchronous data-generation child that writes each
epoch's training shard to disk plus a ready marker; it keeps the child's stderr on a pipe "to
report errors" and never reads it. The child logs every chunk it writes; while it generates epoch 3 the
64 KiB pipe is full and the child blocks in its logging write, so the trainer polls for
epoch 3's ready marker for ever."""

import ctypes
import logging
import os
import signal
import subprocess
import sys
import tempfile
import time

EPOCHS = 5
CHUNKS = 120  # per epoch
ROWS = 32  # per chunk
CHUNK_LOG = (
    "epoch %d chunk %d/%d: %d positives, %d sampled negatives, "
    "user range [%d, %d], item range [%d, %d]"
)


def _die_with_parent():
    ctypes.CDLL("libc.so.6").prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def generate(out_dir: str) -> None:
    """The data-generation child: negative sampling for every epoch, written ahead of use."""
    import numpy as np

    logging.basicConfig(
        stream=sys.stderr,
        level=logging.INFO,
        format="%(asctime)s %(levelname)s [datagen] %(message)s",
    )
    rng = np.random.default_rng(0)
    for epoch in range(EPOCHS):
        parts = []
        for chunk in range(CHUNKS):
            users = rng.integers(0, 1000, ROWS)
            items = rng.integers(0, 5000, ROWS)
            parts.append(np.stack([users, items, rng.integers(0, 2, ROWS)], axis=1))
            stats = (
                ROWS // 2,
                ROWS - ROWS // 2,
                users.min(),
                users.max(),
                items.min(),
                items.max(),
            )
            logging.info(CHUNK_LOG, epoch, chunk + 1, CHUNKS, *stats)  # HANG: child-log
        np.save(os.path.join(out_dir, f"epoch_{epoch}.npy"), np.concatenate(parts))
        open(os.path.join(out_dir, f"epoch_{epoch}.ready"), "w").close()


def wait_for_epoch(out_dir: str, epoch: int):
    import numpy as np

    marker = os.path.join(out_dir, f"epoch_{epoch}.ready")
    while not os.path.exists(marker):  # HANG: wait-ready
        time.sleep(0.5)
    return np.load(os.path.join(out_dir, f"epoch_{epoch}.npy"))


def train(out_dir: str) -> None:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import keras

    child = subprocess.Popen(
        [sys.executable, __file__, "--generate", out_dir],
        stderr=subprocess.PIPE,  # HANG: stderr-pipe
        preexec_fn=_die_with_parent,
    )
    users = keras.Input((1,), dtype="int32")
    items = keras.Input((1,), dtype="int32")
    u = keras.layers.Flatten()(keras.layers.Embedding(1000, 8)(users))
    v = keras.layers.Flatten()(keras.layers.Embedding(5000, 8)(items))
    out = keras.layers.Dense(1, activation="sigmoid")(keras.layers.Dot(axes=1)([u, v]))
    model = keras.Model([users, items], out)
    model.compile(optimizer="adam", loss="binary_crossentropy")
    for epoch in range(EPOCHS):
        data = wait_for_epoch(out_dir, epoch)
        hist = model.fit([data[:, :1], data[:, 1:2]], data[:, 2], batch_size=256, verbose=0)
        print(f"epoch {epoch}: loss {hist.history['loss'][-1]:.4f}", flush=True)
    child.wait()
    print("done", flush=True)


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--generate":
        generate(sys.argv[2])
    else:
        train(tempfile.mkdtemp(prefix="ncf-data-"))
