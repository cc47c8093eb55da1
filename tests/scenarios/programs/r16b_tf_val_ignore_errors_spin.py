"""Keras tabular classifier trained from CSV shards with a tf.data pipeline.

The job writes a small train/validation split as CSV files, builds tf.data
pipelines that parse each line with tf.io.decode_csv, and trains a small MLP
with model.fit(..., validation_data=val_ds, validation_steps=...).  Bad rows are
"handled" by applying Dataset.ignore_errors().

Mechanism: in the validation pipeline the parse step and ignore_errors() are
applied *after* an infinite .repeat().  The validation export uses ';' as the
delimiter and has a different number of columns, so every single validation line
fails to parse.  ignore_errors() silently drops each failing element and asks the
repeated input for the next one; because the repeat always yields (raw) lines it
never sees an empty epoch, so the iterator never produces a batch and never
raises.  Training epoch 1 finishes, then fit() enters validation and sits there
forever while the tf.data thread spins through the same bad lines.

From https://github.com/tensorflow/tensorflow/issues/34458 ("Using skip and
ignore_errors cause training hang": applying ignore_errors() to a repeated
validation dataset whose elements error makes model.fit hang before the
validation step).
"""
import os
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np
import tensorflow as tf
import keras

NUM_FEATURES = 8
BATCH = 32


def write_csv(path, n, rng, delim=",", extra_col=False):
    with open(path, "w") as f:
        f.write(delim.join([f"f{i}" for i in range(NUM_FEATURES)] + ["label"]) + "\n")
        for _ in range(n):
            x = rng.normal(size=NUM_FEATURES)
            y = int(x[:3].sum() > 0)
            cols = [f"{v:.5f}" for v in x] + [str(y)]
            if extra_col:
                cols.append("2024-01-01")
            f.write(delim.join(cols) + "\n")


def parse_line(line):
    defaults = [[0.0]] * NUM_FEATURES + [[0]]
    fields = tf.io.decode_csv(line, record_defaults=defaults)
    x = tf.stack(fields[:NUM_FEATURES])
    y = fields[NUM_FEATURES]
    return x, y


def make_train_ds(path):
    ds = tf.data.TextLineDataset(path).skip(1)
    ds = ds.map(parse_line, num_parallel_calls=2)
    ds = ds.ignore_errors()
    return ds.shuffle(1024).repeat().batch(BATCH).prefetch(2)


def make_val_ds(path):
    ds = tf.data.TextLineDataset(path).skip(1)
    ds = ds.repeat()  # keep validation infinite; fit() bounds it by validation_steps
    ds = ds.map(parse_line)
    ds = ds.ignore_errors()  # HANG: ignore_errors_after_repeat
    return ds.batch(BATCH).prefetch(1)


def main():
    tmp = tempfile.mkdtemp(prefix="r16b_csv_")
    rng = np.random.default_rng(0)
    train_csv = os.path.join(tmp, "train.csv")
    val_csv = os.path.join(tmp, "val.csv")
    write_csv(train_csv, 4096, rng)
    # validation export produced by another tool: ';' separated, extra date column
    write_csv(val_csv, 512, rng, delim=";", extra_col=True)
    print(f"wrote {train_csv} and {val_csv}", flush=True)

    train_ds = make_train_ds(train_csv)
    val_ds = make_val_ds(val_csv)

    model = keras.Sequential([
        keras.Input(shape=(NUM_FEATURES,)),
        keras.layers.Dense(64, activation="relu"),
        keras.layers.Dense(32, activation="relu"),
        keras.layers.Dense(2),
    ])
    model.compile(
        optimizer=keras.optimizers.Adam(1e-3),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )

    class PrintProgress(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            if batch % 20 == 0:
                print(f"  step {batch} loss={logs['loss']:.4f}", flush=True)

        def on_test_begin(self, logs=None):
            print("  running validation ...", flush=True)

        def on_epoch_end(self, epoch, logs=None):
            print(f"epoch {epoch + 1} done: {logs}", flush=True)

    print("starting training", flush=True)
    model.fit(  # HANG: fit_waits_for_validation_batch
        train_ds,
        epochs=5,
        steps_per_epoch=100,
        validation_data=val_ds,
        validation_steps=16,
        callbacks=[PrintProgress()],
        verbose=0,
    )
    print("training finished", flush=True)


if __name__ == "__main__":
    main()
