"""Multi-worker CTR model trained with MultiWorkerMirroredStrategy and a custom loop.

Reproduces the situation reported in
https://github.com/tensorflow/tensorflow/issues/37112
("Custom training loop, iteration over Dataset hangs under
MultiWorkerMirroredStrategy": training stops at the last few batches of the
first epoch and nothing is logged any more).

The launcher starts two workers on 127.0.0.1 with TF_CONFIG.  The training
data is two TFRecord files of different length; with the FILE auto-shard
policy each worker reads one file and derives its steps-per-epoch from its
own file.  Worker 0 therefore runs more steps than worker 1.  After its
last step worker 1 leaves the loop and, as non-chief, polls for the weights
file the chief exports at the end of training.  Worker 0 is still inside the
gradient all-reduce of its next train step, waiting for a peer that will
never join it, so the chief never exports and both processes stay alive
forever with no further progress.
"""
import ctypes
import json
import os
import signal
import socket
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.abspath(__file__))
DATA_DIR = os.path.join("/tmp", "r17b_ctr_data")
NUM_WORKERS = 2
PER_WORKER_BATCH = 64
EPOCHS = 3
NUM_FEATURES = 32
WEIGHTS_PATH = os.path.join("/tmp", "r17b_ctr_model", "final.weights.h5")
SHARD_SIZES = {"clicks-2024-06-a.tfrecord": 1536, "clicks-2024-06-b.tfrecord": 1280}


def _free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def _die_with_parent():
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.prctl(1, signal.SIGKILL, 0, 0, 0)
    if os.getppid() == 1:
        os._exit(1)


def write_shards():
    import numpy as np
    import tensorflow as tf

    os.makedirs(DATA_DIR, exist_ok=True)
    rng = np.random.default_rng(7)
    for name, n in SHARD_SIZES.items():
        path = os.path.join(DATA_DIR, name)
        if os.path.exists(path):
            continue
        with tf.io.TFRecordWriter(path) as w:
            for _ in range(n):
                feats = rng.normal(size=NUM_FEATURES).astype("float32")
                label = float(feats[:4].sum() > 0)
                ex = tf.train.Example(features=tf.train.Features(feature={
                    "dense": tf.train.Feature(float_list=tf.train.FloatList(value=feats)),
                    "clicked": tf.train.Feature(float_list=tf.train.FloatList(value=[label])),
                }))
                w.write(ex.SerializeToString())


def launch():
    write_shards()
    os.makedirs(os.path.dirname(WEIGHTS_PATH), exist_ok=True)
    if os.path.exists(WEIGHTS_PATH):
        os.remove(WEIGHTS_PATH)
    ports = [_free_port() for _ in range(NUM_WORKERS)]
    cluster = {"worker": [f"127.0.0.1:{p}" for p in ports]}
    procs = []
    for idx in range(NUM_WORKERS):
        env = dict(os.environ)
        env["TF_CONFIG"] = json.dumps({"cluster": cluster, "task": {"type": "worker", "index": idx}})
        env["CUDA_VISIBLE_DEVICES"] = ""
        procs.append(subprocess.Popen([sys.executable, os.path.abspath(__file__)], env=env,
                                      preexec_fn=_die_with_parent))

    def _stop(signum, frame):
        for p in procs:
            if p.poll() is None:
                p.kill()
        sys.exit(128 + signum)

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    rc = 0
    for p in procs:
        rc = rc or p.wait()
    sys.exit(rc)


def train_worker():
    import tensorflow as tf
    import keras

    tf_config = json.loads(os.environ["TF_CONFIG"])
    task_index = tf_config["task"]["index"]
    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    global_batch = PER_WORKER_BATCH * strategy.num_replicas_in_sync

    files = sorted(os.path.join(DATA_DIR, f) for f in SHARD_SIZES)
    my_file = files[task_index % len(files)]
    local_examples = sum(1 for _ in tf.data.TFRecordDataset(my_file))
    steps_per_epoch = local_examples // PER_WORKER_BATCH  # HANG: steps_from_local_shard

    spec = {"dense": tf.io.FixedLenFeature([NUM_FEATURES], tf.float32),
            "clicked": tf.io.FixedLenFeature([1], tf.float32)}

    def parse(record):
        ex = tf.io.parse_single_example(record, spec)
        return ex["dense"], ex["clicked"]

    ds = tf.data.Dataset.from_tensor_slices(files).interleave(
        tf.data.TFRecordDataset, cycle_length=1)
    ds = ds.map(parse).shuffle(512).repeat().batch(global_batch).prefetch(2)
    options = tf.data.Options()
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.FILE
    ds = ds.with_options(options)
    dist_ds = strategy.experimental_distribute_dataset(ds)

    with strategy.scope():
        model = keras.Sequential([
            keras.Input((NUM_FEATURES,)),
            keras.layers.Dense(128, activation="relu"),
            keras.layers.Dense(64, activation="relu"),
            keras.layers.Dense(1),
        ])
        optimizer = keras.optimizers.Adam(1e-3)
        loss_obj = keras.losses.BinaryCrossentropy(from_logits=True, reduction="none")

    @tf.function
    def train_step(iterator):
        def step_fn(x, y):
            with tf.GradientTape() as tape:
                logits = model(x, training=True)
                per_example = loss_obj(y, logits)
                loss = tf.nn.compute_average_loss(per_example, global_batch_size=global_batch)
            grads = tape.gradient(loss, model.trainable_variables)
            optimizer.apply_gradients(zip(grads, model.trainable_variables))
            return loss
        x, y = next(iterator)
        return strategy.run(step_fn, args=(x, y))

    print(f"[worker {task_index}] {local_examples} examples in {os.path.basename(my_file)}, "
          f"{steps_per_epoch} steps/epoch", flush=True)
    iterator = iter(dist_ds)
    for epoch in range(EPOCHS):
        t0 = time.time()
        for step in range(steps_per_epoch):  # HANG: loop_ends_early
            per_replica_loss = train_step(iterator)
            if step % 5 == 0:
                local_loss = float(strategy.experimental_local_results(per_replica_loss)[0])
                print(f"[worker {task_index}] epoch {epoch} step {step}/{steps_per_epoch} "
                      f"loss {local_loss:.4f}", flush=True)
        print(f"[worker {task_index}] epoch {epoch} done in {time.time() - t0:.1f}s", flush=True)

    if task_index == 0:
        model.save_weights(WEIGHTS_PATH)
        print("[worker 0] exported weights", flush=True)
    else:
        while not os.path.exists(WEIGHTS_PATH):
            time.sleep(2.0)  # HANG: polls_for_weights
        model.load_weights(WEIGHTS_PATH)
    holdout = ds.take(4)
    auc = keras.metrics.AUC(from_logits=True)
    for x, y in holdout:
        auc.update_state(y, model(x, training=False))
    print(f"[worker {task_index}] holdout AUC {float(auc.result()):.3f}", flush=True)


if __name__ == "__main__":
    if "TF_CONFIG" in os.environ:
        train_worker()
    else:
        launch()
