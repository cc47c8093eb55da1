"""Healthy: review classifier whose TextVectorization.adapt() pass is long and silent.

Source: https://github.com/keras-team/keras/pull/22971
  "Adding an Adapt progress bar" -- the maintainer notes that "running through the
  whole dataset is slow" in adapt(), and the PR exists because adapt() printed no
  progress at all while it scanned the data (a TODO "consider adding an adapt
  progress bar").

What happens:
  The script builds a corpus of ~210k synthetic product reviews, then calls
  TextVectorization(ngrams=2, max_tokens=20000).adapt() on it. adapt() streams
  the whole corpus through the tokenizer and counts every unigram and bigram
  before it can pick the vocabulary; on this 2-core box that takes roughly
  25 s when idle (60 s when the box is shared) and prints nothing (no progress bar, no callbacks). A naive watchdog
  that expects a log line every few seconds would call it a hang, but the main
  thread is busy in the adapt loop and finishes. Afterwards the model trains for
  two short epochs with a log line every 20 steps, and the script exits 0.
"""
import os
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np
import tensorflow as tf
import keras

tf.config.threading.set_intra_op_parallelism_threads(1)
tf.config.threading.set_inter_op_parallelism_threads(2)

N_DOCS = 210_000
DOC_LEN = 40
MAX_TOKENS = 20_000
SEQ_LEN = 64
BATCH = 128
LOG_EVERY = 20

workdir = tempfile.mkdtemp(prefix="r19b_reviews_")
t_start = time.time()


def log(msg):
    print(f"[{time.time() - t_start:6.1f}s] {msg}", flush=True)


def build_corpus(n, seed=0):
    """Zipf-distributed 'words'; sentiment is carried by a few marker words."""
    rng = np.random.default_rng(seed)
    letters = list("abcdefghijklmnopqrstuvwxyz")
    words = np.array(["".join(rng.choice(letters, rng.integers(3, 9))) for _ in range(30_000)])
    p = 1.0 / np.arange(1, len(words) + 1)
    p /= p.sum()
    idx = rng.choice(len(words), size=(n, DOC_LEN), p=p)
    labels = rng.integers(0, 2, size=n).astype(np.int32)
    pos, neg = words[[50, 51, 52]], words[[60, 61, 62]]
    docs = []
    for r, y in zip(idx, labels):
        toks = list(words[r])
        marker = pos if y == 1 else neg
        for j in rng.integers(0, DOC_LEN, size=3):
            toks[j] = marker[rng.integers(0, 3)]
        docs.append(" ".join(toks))
    return docs, labels


log("building review corpus")
docs, labels = build_corpus(N_DOCS)
with open(os.path.join(workdir, "reviews_sample.txt"), "w") as f:
    f.write("\n".join(docs[:1000]))
log(f"corpus ready: {len(docs)} reviews, {DOC_LEN} tokens each -> {workdir}")

vectorizer = keras.layers.TextVectorization(max_tokens=MAX_TOKENS, output_sequence_length=SEQ_LEN,
                                            ngrams=2)
log("adapting vocabulary (unigrams + bigrams) over the full corpus ...")
vectorizer.adapt(tf.data.Dataset.from_tensor_slices(docs).batch(512))  # HANG: silent_adapt_pass
log(f"vocabulary ready: {len(vectorizer.get_vocabulary())} tokens")

n_train = 24_000
text_ds = tf.data.Dataset.from_tensor_slices((docs[:n_train], labels[:n_train]))
train_ds = (text_ds.shuffle(4096, seed=0).batch(BATCH)
            .map(lambda x, y: (vectorizer(x), y), num_parallel_calls=2).prefetch(2))
val_ds = (tf.data.Dataset.from_tensor_slices((docs[n_train:n_train + 2048], labels[n_train:n_train + 2048]))
          .batch(BATCH).map(lambda x, y: (vectorizer(x), y)).prefetch(2))

model = keras.Sequential([
    keras.Input((SEQ_LEN,), dtype="int64"),
    keras.layers.Embedding(MAX_TOKENS, 32),
    keras.layers.GlobalAveragePooling1D(),
    keras.layers.Dense(32, activation="relu"),
    keras.layers.Dense(1),
])
model.compile(optimizer=keras.optimizers.Adam(2e-3),
              loss=keras.losses.BinaryCrossentropy(from_logits=True),
              metrics=[keras.metrics.BinaryAccuracy(threshold=0.0, name="acc")])


class StepLogger(keras.callbacks.Callback):
    def on_epoch_begin(self, epoch, logs=None):
        self.epoch = epoch

    def on_train_batch_end(self, batch, logs=None):
        if batch % LOG_EVERY == 0:
            log(f"epoch {self.epoch} step {batch} loss {logs['loss']:.4f} acc {logs['acc']:.3f}")

    def on_epoch_end(self, epoch, logs=None):
        log(f"epoch {epoch} val_loss {logs['val_loss']:.4f} val_acc {logs['val_acc']:.3f}")


model.fit(train_ds, validation_data=val_ds, epochs=2, callbacks=[StepLogger()], verbose=0)
model.save(os.path.join(workdir, "review_clf.keras"))
log("training complete, model saved")
