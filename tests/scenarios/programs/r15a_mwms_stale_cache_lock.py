"""Source: https://github.com/tensorflow/hub/issues/579 ("Module ... already being downloaded by
'<host>.<pid>'. Waiting." -- the job freezes on a download lock in the cache dir)
Mechanism: two MultiWorkerMirroredStrategy workers on loopback each fetch the shard of every
epoch into their own local cache, guarded by a TF-Hub-style lock file. On worker 1 a lock for
epoch 1's shard is left over from a preempted earlier run; it waits for the "other download"
to finish, outside any collective, while worker 0 waits in the first step of epoch 1 for its
gradients to be all-reduced."""

import ctypes
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

PORTS = [29963, 29964]
STEPS = 5
BATCH = 16


def _die_with_parent():
    ctypes.CDLL("libc.so.6").prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def fetch_shard(cache_dir: str, epoch: int, index: int):
    """Download (here: generate) this worker's shard once; other processes wait on the lock."""
    import numpy as np

    path = os.path.join(cache_dir, f"shard-{epoch:03d}-of-{index}.npy")
    lock = path + ".lock"
    if os.path.exists(lock):
        with open(lock) as f:
            print(
                f"worker {index}: {path} already being downloaded by {f.read()!r}. Waiting.",
                flush=True,
            )
    while os.path.exists(lock):  # HANG: lock-wait
        time.sleep(0.5)
    if not os.path.exists(path):
        with open(lock, "w") as f:
            f.write(f"{os.uname().nodename}.{os.getpid()}")
        rng = np.random.default_rng(epoch * 10 + index)
        np.save(path, rng.random((STEPS * BATCH, 8), dtype=np.float32))
        os.remove(lock)
    return np.load(path)


def worker(index: int, cache_dir: str) -> None:
    workers = [f"127.0.0.1:{p}" for p in PORTS]
    os.environ["TF_CONFIG"] = json.dumps(
        {"cluster": {"worker": workers}, "task": {"type": "worker", "index": index}}
    )
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf

    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    with strategy.scope():
        w = tf.Variable(tf.zeros([8, 1]))
        b = tf.Variable(tf.zeros([1]))

    @tf.function
    def train_step(x, y):
        def replica_step(x, y):
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean((tf.matmul(x, w) + b - y) ** 2)
            grads = tape.gradient(loss, [w, b])
            grads = tf.distribute.get_replica_context().all_reduce("mean", grads)  # HANG: allreduce
            w.assign_sub(0.05 * grads[0])
            b.assign_sub(0.05 * grads[1])
            return loss

        return strategy.run(replica_step, args=(x, y))

    for epoch in range(3):
        data = fetch_shard(cache_dir, epoch, index)  # HANG: fetch
        for step in range(STEPS):
            x = data[step * BATCH : (step + 1) * BATCH]
            loss = train_step(tf.constant(x), tf.constant(x.sum(axis=1, keepdims=True)))
            print(f"worker {index}: epoch {epoch} step {step} loss {float(loss):.4f}", flush=True)


def main() -> None:
    caches = [tempfile.mkdtemp(prefix=f"shards-w{i}-") for i in range(2)]
    # worker 1's host still has the lock of a run that was preempted while downloading epoch 1
    with open(os.path.join(caches[1], "shard-001-of-1.npy.lock"), "w") as f:  # HANG: stale-lock
        f.write("trainer-7f9c.31337")
    procs = [
        subprocess.Popen([sys.executable, __file__, str(i), caches[i]], preexec_fn=_die_with_parent)
        for i in range(2)
    ]
    sys.exit(max(p.wait() for p in procs))


if __name__ == "__main__":
    if len(sys.argv) > 1:
        worker(int(sys.argv[1]), sys.argv[2])
    else:
        main()
