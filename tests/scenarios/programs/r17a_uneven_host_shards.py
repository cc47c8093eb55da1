"""Two-host data-parallel JAX training of a small click-through-rate model.

Reproduces the situation reported in https://github.com/jax-ml/jax/issues/38503
("Multi-host job hangs forever when one rank is alive-but-stuck in an NCCL
collective"): one process stops entering the gradient all-reduce while staying
alive (its coordination-service heartbeat keeps beating), so the other process
blocks forever inside the collective with no error and no timeout.

Here the process that stops is not artificially paused: each host reads its own
subset of the record files (files[process_index::process_count]), and five files
over two hosts give host 0 three files and host 1 only two.  Host 1 runs out of
batches after 48 steps, leaves the training loop and waits in
jax.distributed's shutdown barrier, while host 0 enters step 49 and waits in
the Gloo all-reduce of the gradients for a peer that never comes.

The script launches both processes itself (coordinator on 127.0.0.1 and a
free port) and kills them when it is terminated.
"""
import ctypes
import os
import signal
import socket
import subprocess
import sys
import time

NUM_PROCESSES = 2
NUM_FILES = 5
RECORDS_PER_FILE = 256
PER_HOST_BATCH = 32
NUM_EPOCHS = 3
NUM_FEATURES = 64
HIDDEN = 256
LOG_EVERY = 8


def _free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def _die_with_parent():
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def launch():
    port = _free_port()
    procs = []

    def stop_children(signum, frame):
        for p in procs:
            if p.poll() is None:
                p.kill()
        sys.exit(128 + signum)

    signal.signal(signal.SIGTERM, stop_children)
    signal.signal(signal.SIGINT, stop_children)

    for rank in range(NUM_PROCESSES):
        env = dict(os.environ)
        env.update({
            "JAX_PLATFORMS": "cpu",
            "XLA_FLAGS": "--xla_force_host_platform_device_count=1",
            "CTR_RANK": str(rank),
            "CTR_COORDINATOR": f"127.0.0.1:{port}",
            "PYTHONUNBUFFERED": "1",
        })
        procs.append(subprocess.Popen([sys.executable, os.path.abspath(__file__)],
                                      env=env, preexec_fn=_die_with_parent))
    codes = [p.wait() for p in procs]
    print(f"[launcher] workers exited with {codes}", flush=True)
    sys.exit(max(abs(c) for c in codes))


# --------------------------------------------------------------------------
# worker
# --------------------------------------------------------------------------

def worker():
    rank = int(os.environ["CTR_RANK"])
    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(coordinator_address=os.environ["CTR_COORDINATOR"],
                               num_processes=NUM_PROCESSES, process_id=rank)
    pid = jax.process_index()
    nproc = jax.process_count()

    def log(msg):
        print(f"[host {pid}] {msg}", flush=True)

    log(f"devices: {jax.devices()}")
    mesh = Mesh(np.array(jax.devices()), ("data",))
    data_sharding = NamedSharding(mesh, P("data"))
    replicated = NamedSharding(mesh, P())

    # ---------------- data -------------------------------------------------
    files = [f"clicks-{i:05d}-of-{NUM_FILES:05d}.rec" for i in range(NUM_FILES)]
    true_w = np.random.default_rng(1234).normal(size=(NUM_FEATURES,)).astype(np.float32)

    def read_file(name):
        seed = int(name.split("-")[1])
        rng = np.random.default_rng(seed)
        x = rng.normal(size=(RECORDS_PER_FILE, NUM_FEATURES)).astype(np.float32)
        logits = x @ true_w / np.sqrt(NUM_FEATURES)
        y = (rng.uniform(size=RECORDS_PER_FILE) < 1 / (1 + np.exp(-logits))).astype(np.float32)
        time.sleep(0.05)
        return x, y

    class HostDataLoader:
        def __init__(self, file_names, batch_size, seed):
            self.file_names = file_names
            self.batch_size = batch_size
            self.rng = np.random.default_rng(seed)

        def __iter__(self):
            order = self.rng.permutation(len(self.file_names))
            for idx in order:
                x, y = read_file(self.file_names[idx])
                perm = self.rng.permutation(len(x))
                for start in range(0, len(x) - self.batch_size + 1, self.batch_size):
                    sel = perm[start:start + self.batch_size]
                    yield {"x": x[sel], "y": y[sel]}

    host_files = files[pid::nproc]  # HANG: uneven_host_split
    log(f"reading {len(host_files)} files: {host_files}")
    loader = HostDataLoader(host_files, PER_HOST_BATCH, seed=pid)

    def to_global(batch):
        return {k: jax.make_array_from_process_local_data(data_sharding, v)
                for k, v in batch.items()}

    # ---------------- model ------------------------------------------------
    def init_params(key):
        k1, k2, k3 = jax.random.split(key, 3)
        return {
            "dense1": {"w": jax.random.normal(k1, (NUM_FEATURES, HIDDEN)) * 0.05,
                       "b": jnp.zeros((HIDDEN,))},
            "dense2": {"w": jax.random.normal(k2, (HIDDEN, HIDDEN)) * 0.05,
                       "b": jnp.zeros((HIDDEN,))},
            "head": {"w": jax.random.normal(k3, (HIDDEN, 1)) * 0.05,
                     "b": jnp.zeros((1,))},
        }

    def apply(params, x):
        h = jax.nn.gelu(x @ params["dense1"]["w"] + params["dense1"]["b"])
        h = jax.nn.gelu(h @ params["dense2"]["w"] + params["dense2"]["b"])
        return (h @ params["head"]["w"] + params["head"]["b"])[:, 0]

    def loss_fn(params, batch):
        logits = apply(params, batch["x"])
        loss = jnp.mean(jnp.logaddexp(0.0, logits) - batch["y"] * logits)
        acc = jnp.mean((logits > 0) == (batch["y"] > 0.5))
        return loss, acc

    # ---------------- optimizer (optax-style adamw) ------------------------
    def adamw(lr, b1=0.9, b2=0.999, eps=1e-8, wd=1e-4):
        def init(params):
            zeros = jax.tree.map(jnp.zeros_like, params)
            return {"mu": zeros, "nu": zeros, "count": jnp.zeros((), jnp.int32)}

        def update(grads, state, params):
            count = state["count"] + 1
            mu = jax.tree.map(lambda m, g: b1 * m + (1 - b1) * g, state["mu"], grads)
            nu = jax.tree.map(lambda v, g: b2 * v + (1 - b2) * g * g, state["nu"], grads)
            c1 = 1 - b1 ** count
            c2 = 1 - b2 ** count
            updates = jax.tree.map(
                lambda m, v, p: -lr * ((m / c1) / (jnp.sqrt(v / c2) + eps) + wd * p),
                mu, nu, params)
            return updates, {"mu": mu, "nu": nu, "count": count}

        return init, update

    opt_init, opt_update = adamw(3e-3)

    params = jax.device_put(init_params(jax.random.PRNGKey(0)), replicated)
    opt_state = jax.device_put(opt_init(params), replicated)

    @jax.jit
    def train_step(params, opt_state, batch):
        (loss, acc), grads = jax.value_and_grad(loss_fn, has_aux=True)(params, batch)
        updates, opt_state = opt_update(grads, opt_state, params)
        params = jax.tree.map(lambda p, u: p + u, params, updates)
        return params, opt_state, {"loss": loss, "acc": acc}

    # ---------------- training loop ----------------------------------------
    step = 0
    t0 = time.time()
    for epoch in range(NUM_EPOCHS):
        for batch in loader:  # HANG: loop_ends_early
            params, opt_state, metrics = train_step(params, opt_state, to_global(batch))
            step += 1
            if step % LOG_EVERY == 0:
                m = jax.device_get(metrics)
                log(f"epoch {epoch} step {step} loss {m['loss']:.4f} "
                    f"acc {m['acc']:.3f} ({time.time() - t0:.1f}s)")
        log(f"epoch {epoch} done after {step} steps")

    log(f"training finished: {step} steps in {time.time() - t0:.1f}s")  # HANG: leaves_training
    if pid == 0:
        np.save("/tmp/ctr_final_params.npy",
                np.asarray(jax.device_get(params["head"]["w"])))
        log("saved final head weights")


if __name__ == "__main__":
    if "CTR_RANK" in os.environ:
        worker()
    else:
        launch()
