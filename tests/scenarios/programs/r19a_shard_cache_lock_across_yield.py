"""Data-parallel JAX training (2 CPU processes, gloo) whose per-epoch shard cache
holds a cross-process file lock across a generator `yield`.

Source: https://devblogs.microsoft.com/oldnewthing/20210707-00/?p=105417
  ("On the perils of holding a lock across a coroutine suspension point": the lock
  remains held while the coroutine is suspended, so anybody else who wants it blocks
  until the coroutine is resumed -- which may never happen.)

What happens:
  Both processes share one on-disk cache of augmented, shuffled epoch files. Epochs
  0-2 are a warm-up on the clean in-memory data, so they train fine and both processes
  log steps. From epoch 3 on, `EpochCache.iter_epoch` takes an exclusive `fcntl.flock` on
  the cache directory ("one host builds, the others wait, then everybody reads"),
  builds the epoch file if missing, and then `yield from`s the batches *inside* the
  `with` block. A Python
  generator suspended at `yield` keeps its `with` open, so the lock stays held while
  the training loop runs the step. Process 1 (process 0 is a little later because it
  writes the end-of-epoch checkpoint) wins the lock, yields its first batch and
  enters the jitted train step, whose gradient all-reduce (gloo) waits for process 0.
  Process 0 sits in `fcntl.flock(LOCK_EX)` waiting for the lock process 1 will only
  release when its generator is resumed after the step finishes. Cross-process
  deadlock: process 0 blocked in flock (outside any collective), process 1 blocked in
  the all-reduce. Both stay alive and heartbeat, so nothing ever times out.
"""
import fcntl
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

import numpy as np

NUM_PROCS = 2
EPOCHS = 6
WARMUP_EPOCHS = 3
GLOBAL_BATCH = 64
N_TRAIN = 4096
IN_DIM, HIDDEN, N_CLASSES = 128, 768, 10
LR = 3e-3


def launch():
    port = random.randint(20000, 40000)
    workdir = tempfile.mkdtemp(prefix="r19a_cache_")
    procs = []
    for rank in range(NUM_PROCS):
        env = dict(os.environ, R19A_RANK=str(rank), R19A_PORT=str(port), R19A_DIR=workdir)
        procs.append(subprocess.Popen([sys.executable, os.path.abspath(__file__)], env=env))

    def _forward(signum, frame):
        for p in procs:
            if p.poll() is None:
                p.kill()  # workers trap SIGTERM (JAX preemption notifier)
        sys.exit(128 + signum)

    signal.signal(signal.SIGTERM, _forward)
    signal.signal(signal.SIGINT, _forward)
    rcs = [p.wait() for p in procs]
    print(f"[launcher] workers exited with {rcs}", flush=True)
    sys.exit(max(abs(rc) for rc in rcs))


class EpochCache:
    """Per-epoch augmented + shuffled copy of the training set, shared by all hosts."""

    def __init__(self, root, base_x, base_y, rank, nprocs):
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.base_x, self.base_y = base_x, base_y
        self.rank, self.nprocs = rank, nprocs

    def path_for(self, epoch):
        return self.root / f"epoch_{epoch:03d}.npz"

    @contextmanager
    def _flock(self):
        with open(self.root / ".cache.lock", "a+") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)  # HANG: flock_blocks
            try:
                yield
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)

    def _build(self, epoch, path):
        rng = np.random.default_rng(1000 + epoch)
        perm = rng.permutation(len(self.base_x))
        x = self.base_x[perm] + rng.normal(0, 0.05, self.base_x.shape).astype(np.float32)
        x *= rng.uniform(0.9, 1.1, size=(len(x), 1)).astype(np.float32)
        tmp = path.with_suffix(".tmp.npz")
        np.savez(tmp, x=x, y=self.base_y[perm])
        os.replace(tmp, path)

    def _batches(self, x, y):
        local = GLOBAL_BATCH // self.nprocs
        for start in range(0, len(x) - GLOBAL_BATCH + 1, GLOBAL_BATCH):
            lo = start + self.rank * local
            yield x[lo:lo + local], y[lo:lo + local]

    def iter_epoch(self, epoch):
        if epoch < WARMUP_EPOCHS:
            # warm-up epochs on the clean, un-augmented data (already in memory)
            yield from self._batches(self.base_x, self.base_y)
            return
        path = self.path_for(epoch)
        with self._flock():  # one host builds, the others wait, then everybody reads
            if not path.exists():
                self._build(epoch, path)
            data = np.load(path)
            yield from self._batches(data["x"], data["y"])  # HANG: lock_held_across_yield


def main():
    rank = int(os.environ["R19A_RANK"])
    workdir = os.environ["R19A_DIR"]

    import jax
    import jax.numpy as jnp
    from jax.sharding import NamedSharding, PartitionSpec as P

    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(coordinator_address=f"127.0.0.1:{os.environ['R19A_PORT']}",
                               num_processes=NUM_PROCS, process_id=rank)
    mesh = jax.make_mesh((jax.device_count(),), ("data",))
    repl = NamedSharding(mesh, P())
    batch_sh = NamedSharding(mesh, P("data"))
    log = lambda msg: print(f"[proc {rank}] {msg}", flush=True)
    log(f"initialised: {jax.process_count()} processes, {jax.device_count()} devices")

    # synthetic "dataset": a fixed random teacher network labels gaussian inputs
    rng = np.random.default_rng(0)
    base_x = rng.normal(size=(N_TRAIN, IN_DIM)).astype(np.float32)
    teacher = rng.normal(size=(IN_DIM, N_CLASSES)).astype(np.float32)
    base_y = np.argmax(np.tanh(base_x @ teacher) + 0.1 * rng.normal(size=(N_TRAIN, N_CLASSES)), axis=1).astype(np.int32)
    cache = EpochCache(os.path.join(workdir, "epoch_cache"), base_x, base_y, rank, NUM_PROCS)

    def init_params(key):
        k1, k2, k3 = jax.random.split(key, 3)
        return {
            "w1": jax.random.normal(k1, (IN_DIM, HIDDEN)) * (1.0 / IN_DIM) ** 0.5,
            "b1": jnp.zeros(HIDDEN),
            "w2": jax.random.normal(k2, (HIDDEN, HIDDEN)) * (1.0 / HIDDEN) ** 0.5,
            "b2": jnp.zeros(HIDDEN),
            "w3": jax.random.normal(k3, (HIDDEN, N_CLASSES)) * (1.0 / HIDDEN) ** 0.5,
            "b3": jnp.zeros(N_CLASSES),
        }

    def forward(p, x):
        h = jax.nn.gelu(x @ p["w1"] + p["b1"])
        h = jax.nn.gelu(h @ p["w2"] + p["b2"])
        return h @ p["w3"] + p["b3"]

    def loss_fn(p, x, y):
        logits = forward(p, x)
        logp = jax.nn.log_softmax(logits)
        nll = -jnp.take_along_axis(logp, y[:, None], axis=1).mean()
        acc = (jnp.argmax(logits, -1) == y).mean()
        return nll, acc

    @jax.jit
    def train_step(p, m, v, t, x, y):
        (loss, acc), g = jax.value_and_grad(loss_fn, has_aux=True)(p, x, y)
        t = t + 1
        m = jax.tree.map(lambda a, b: 0.9 * a + 0.1 * b, m, g)
        v = jax.tree.map(lambda a, b: 0.999 * a + 0.001 * b * b, v, g)
        mhat = jax.tree.map(lambda a: a / (1 - 0.9 ** t), m)
        vhat = jax.tree.map(lambda a: a / (1 - 0.999 ** t), v)
        p = jax.tree.map(lambda a, b, c: a - LR * b / (jnp.sqrt(c) + 1e-8), p, mhat, vhat)
        return p, m, v, t, loss, acc

    params = jax.jit(init_params, out_shardings=repl)(jax.random.key(42))
    zeros = jax.jit(lambda p: jax.tree.map(jnp.zeros_like, p), out_shardings=repl)
    m, v = zeros(params), zeros(params)
    t = jax.jit(lambda: jnp.zeros(()), out_shardings=repl)()

    ckpt_dir = Path(workdir) / "ckpt"
    step = 0
    for epoch in range(EPOCHS):
        t0 = time.time()
        for xb, yb in cache.iter_epoch(epoch):
            gx = jax.make_array_from_process_local_data(batch_sh, xb)
            gy = jax.make_array_from_process_local_data(batch_sh, yb)
            params, m, v, t, loss, acc = train_step(params, m, v, t, gx, gy)  # HANG: allreduce_waits_for_peer
            step += 1
            if step % 10 == 0:
                log(f"epoch {epoch} step {step} loss {float(loss):.4f} acc {float(acc):.3f}")  # HANG: blocks_on_step_result
        log(f"epoch {epoch} done in {time.time() - t0:.1f}s")
        if rank == 0:
            # primary host writes the checkpoint from its local replica
            ckpt_dir.mkdir(exist_ok=True)
            host = {k: np.asarray(a.addressable_data(0)) for k, a in params.items()}
            host.update({f"m_{k}": np.asarray(a.addressable_data(0)) for k, a in m.items()})
            host.update({f"v_{k}": np.asarray(a.addressable_data(0)) for k, a in v.items()})
            np.savez_compressed(ckpt_dir / f"ckpt_{epoch:03d}.npz", **host)
            log(f"saved checkpoint for epoch {epoch}")
    log("training finished")
    jax.distributed.shutdown()


if __name__ == "__main__":
    if "R19A_RANK" not in os.environ:
        launch()
    else:
        main()
