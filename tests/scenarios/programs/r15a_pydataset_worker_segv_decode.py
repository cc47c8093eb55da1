"""Source: https://github.com/keras-team/keras/issues/11461 (fit hangs in
`self.queue.get(block=True).get()` when a Sequence worker process is lost mid-epoch)
Mechanism: Keras `fit` reads a `keras.utils.PyDataset` with `workers=2,
use_multiprocessing=True`. Each record is unpacked by a small ctypes "fast decoder" that trusts
the offset in the record header; one truncated record carries a garbage offset, and the worker
process that decodes it dies of SIGSEGV. The pool quietly starts a new worker, but the batch
that was in the dead one never arrives and `fit` waits for it forever."""

import ctypes
import os
import struct

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import keras
import numpy as np

FEATURES = 16
BATCH = 8
RECORDS = 640
BAD_RECORD = 40 * BATCH + 3  # a shard truncated by an interrupted copy


def make_records():
    rng = np.random.default_rng(0)
    out = []
    for i in range(RECORDS):
        payload = rng.random(FEATURES, dtype=np.float32).tobytes()
        offset = 8 if i != BAD_RECORD else 0x7FFF_FFFF_0000  # header written before the crash
        out.append(struct.pack("<Q", offset) + payload)
    return out


def fast_decode(record: bytes) -> np.ndarray:
    (offset,) = struct.unpack_from("<Q", record)
    out = np.empty(FEATURES, dtype=np.float32)
    src = ctypes.cast(ctypes.c_char_p(record), ctypes.c_void_p).value
    ctypes.memmove(out.ctypes.data, src + offset, FEATURES * 4)  # HANG: decode
    return out


class RecordBatches(keras.utils.PyDataset):
    def __init__(self, records, **kwargs):
        super().__init__(**kwargs)
        self.records = records

    def __len__(self):
        return len(self.records) // BATCH

    def __getitem__(self, idx):
        rows = [fast_decode(r) for r in self.records[idx * BATCH : (idx + 1) * BATCH]]
        x = np.stack(rows)
        y = x.sum(axis=1, keepdims=True)
        return x, y


class Progress(keras.callbacks.Callback):
    def on_epoch_begin(self, epoch, logs=None):
        self.epoch = epoch

    def on_train_batch_end(self, batch, logs=None):
        if batch % 5 == 0:
            print(f"epoch {self.epoch} batch {batch} loss {logs['loss']:.4f}", flush=True)


def main() -> None:
    data = RecordBatches(make_records(), workers=2, use_multiprocessing=True, max_queue_size=4)
    model = keras.Sequential(
        [keras.Input((FEATURES,)), keras.layers.Dense(32, activation="relu"), keras.layers.Dense(1)]
    )
    model.compile(optimizer="adam", loss="mse")
    model.fit(data, epochs=4, verbose=0, shuffle=False, callbacks=[Progress()])  # HANG: fit
    print("done", flush=True)


if __name__ == "__main__":
    main()
