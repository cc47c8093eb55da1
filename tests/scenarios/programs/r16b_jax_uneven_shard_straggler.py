"""Two-process data-parallel JAX regression training on CPU (jax.distributed).

The launcher writes the training set as 5 .npz shard files, starts a local JAX
coordinator on 127.0.0.1 and two worker processes.  Each worker takes every
second shard file (round-robin), streams batches from its files through a
background prefetch thread into a queue.Queue, and feeds them into a jitted
train step over a 2-device global mesh; the global mean loss makes XLA insert
an all-reduce of the gradients across the two processes (gloo on CPU).

Mechanism: the number of training steps is computed from the *global* number of
batches (5 files x 4 batches / 2 processes = 10 steps per process), but the
files are split unevenly: process 0 gets 3 files (12 batches), process 1 gets
2 files (8 batches).  Process 1's prefetch thread finishes after 8 batches and
exits without a sentinel, so at step 8 process 1 blocks forever in
queue.get() *outside* the collective, while process 0 has already dispatched
step 8 and waits forever inside the gradient all-reduce for its peer.  Process
1 is alive and its coordination-service heartbeat keeps beating, so nothing
times out; there is no error and no warning.

From https://github.com/jax-ml/jax/issues/38503 ("Multi-host job hangs forever
when one rank is alive-but-stuck": if a single process stops entering a
collective while staying alive, every other process blocks forever inside the
collective with no error and no timeout).
"""
import os
import queue
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

NUM_PROCS = 2
NUM_FILES = 5
BATCHES_PER_FILE = 4
PER_HOST_BATCH = 64
FEATURES = 16


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def write_shards(data_dir):
    import numpy as np

    rng = np.random.default_rng(0)
    w_true = rng.normal(size=(FEATURES, 1))
    for i in range(NUM_FILES):
        x = rng.normal(size=(BATCHES_PER_FILE * PER_HOST_BATCH, FEATURES)).astype("float32")
        y = (x @ w_true + 0.1 * rng.normal(size=(x.shape[0], 1))).astype("float32")
        np.savez(os.path.join(data_dir, f"train-{i:05d}.npz"), x=x, y=y)


def prefetch(files, q):
    import numpy as np

    for path in files:
        with np.load(path) as d:
            x, y = d["x"], d["y"]
        for b in range(0, len(x), PER_HOST_BATCH):
            q.put((x[b:b + PER_HOST_BATCH], y[b:b + PER_HOST_BATCH]))
            time.sleep(0.05)  # simulated storage latency


def worker(rank, port, data_dir):
    import numpy as np
    import jax
    import jax.numpy as jnp
    from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

    jax.distributed.initialize(
        coordinator_address=f"127.0.0.1:{port}", num_processes=NUM_PROCS, process_id=rank
    )
    mesh = Mesh(np.array(jax.devices()), ("data",))
    data_sharding = NamedSharding(mesh, P("data"))
    replicated = NamedSharding(mesh, P())

    all_files = sorted(os.listdir(data_dir))
    my_files = [os.path.join(data_dir, f) for f in all_files[rank::NUM_PROCS]]
    steps_per_epoch = NUM_FILES * BATCHES_PER_FILE // NUM_PROCS
    print(f"[rank {rank}] {len(my_files)} shard files, {steps_per_epoch} steps/epoch", flush=True)

    q = queue.Queue(maxsize=4)
    threading.Thread(target=prefetch, args=(my_files, q), daemon=True).start()

    key = jax.random.PRNGKey(0)
    params = {
        "w1": jax.random.normal(key, (FEATURES, 64)) / 4.0,
        "b1": jnp.zeros((64,)),
        "w2": jnp.zeros((64, 1)),
    }
    params = jax.device_put(params, replicated)

    def loss_fn(p, x, y):
        h = jax.nn.gelu(x @ p["w1"] + p["b1"])
        return jnp.mean((h @ p["w2"] - y) ** 2)

    def train_step(p, x, y):
        loss, g = jax.value_and_grad(loss_fn)(p, x, y)
        p = jax.tree_util.tree_map(lambda a, b: a - 0.05 * b, p, g)
        return p, loss

    train_step = jax.jit(train_step, out_shardings=(replicated, replicated))

    t0 = time.time()
    for step in range(steps_per_epoch):
        x_local, y_local = q.get()  # HANG: straggler_blocked_on_empty_prefetch_queue
        x = jax.make_array_from_process_local_data(data_sharding, x_local)
        y = jax.make_array_from_process_local_data(data_sharding, y_local)
        params, loss = train_step(params, x, y)
        loss = float(loss)  # HANG: peer_waits_in_gradient_allreduce
        print(f"[rank {rank}] step {step} loss={loss:.4f} t={time.time() - t0:.1f}s", flush=True)

    print(f"[rank {rank}] epoch done", flush=True)
    jax.distributed.shutdown()


def main():
    data_dir = tempfile.mkdtemp(prefix="r16b_shards_")
    write_shards(data_dir)
    port = free_port()
    print(f"coordinator 127.0.0.1:{port}, data in {data_dir}", flush=True)
    procs = [
        subprocess.Popen([sys.executable, os.path.abspath(__file__), "--worker", str(r), str(port), data_dir])
        for r in range(NUM_PROCS)
    ]

    def _stop(signum, frame):
        for p in procs:
            if p.poll() is None:
                p.kill()
        sys.exit(128 + signum)

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    codes = [p.wait() for p in procs]
    print(f"workers exited with {codes}", flush=True)
    sys.exit(max(codes))


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        worker(int(sys.argv[2]), int(sys.argv[3]), sys.argv[4])
    else:
        main()
