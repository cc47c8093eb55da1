"""Two-host data-parallel JAX training where evaluation + checkpointing are done
only on the primary host.

Source: https://github.com/google/orbax/issues/211
("save_checkpoint_multiprocess gets stuck on a pod slices"): the training loop
guards evaluation and `save_model(...)` with `if jax.process_index() == 0:`,
but the multi-process checkpoint save contains a cross-host synchronisation
(flax's save_checkpoint_multiprocess calls multihost_utils.sync_global_devices)
that every host must enter.  Only host 0 enters it; the other hosts carry on
into the next data-parallel train step, whose gradient all-reduce needs host 0.
Each side waits for the other and the job stops making progress without any
error message.

The program launches its own workers: `python prog.py` starts two
jax.distributed CPU processes (coordinator on 127.0.0.1, gloo collectives).
"""
import argparse
import ctypes
import os
import signal
import socket
import subprocess
import sys
import time

import numpy as np

NUM_HOSTS = 2
FEATURES = 48
HIDDEN = 256
CLASSES = 6
PER_HOST_BATCH = 64
STEPS_PER_EPOCH = 40
EPOCHS = 6
LOG_EVERY = 10
EVAL_EVERY = 60
CKPT_DIR = "/tmp/r18a_churn_ckpt"


# ----------------------------------------------------------------------------
# launcher
# ----------------------------------------------------------------------------
def _free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _die_with_parent():
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def launch():
    port = _free_port()
    procs = []

    def _shutdown(signum, frame):
        for p in procs:
            try:
                p.kill()
            except OSError:
                pass
        os._exit(128 + signum)

    signal.signal(signal.SIGTERM, _shutdown)
    signal.signal(signal.SIGINT, _shutdown)

    for rank in range(NUM_HOSTS):
        env = dict(os.environ)
        env["JAX_PLATFORMS"] = "cpu"
        cmd = [sys.executable, os.path.abspath(__file__), "--worker",
               "--rank", str(rank), "--port", str(port)]
        procs.append(subprocess.Popen(cmd, env=env, preexec_fn=_die_with_parent))
    print(f"[launcher] started {NUM_HOSTS} hosts, coordinator 127.0.0.1:{port}", flush=True)
    rc = 0
    for p in procs:
        rc = max(rc, p.wait())
    print(f"[launcher] all hosts exited, rc={rc}", flush=True)
    sys.exit(rc)


# ----------------------------------------------------------------------------
# worker
# ----------------------------------------------------------------------------
def make_host_dataset(rank, n_batches, seed=0):
    """Synthetic customer-churn style table, a different shard per host."""
    rng = np.random.default_rng(seed)
    w_true = rng.normal(size=(FEATURES, CLASSES)).astype(np.float32)
    rng = np.random.default_rng(seed + 1000 * (rank + 1))
    x = rng.normal(size=(n_batches * PER_HOST_BATCH, FEATURES)).astype(np.float32)
    logits = x @ w_true + 0.5 * rng.normal(size=(x.shape[0], CLASSES))
    y = logits.argmax(-1).astype(np.int32)
    return x, y


class HostBatches:
    def __init__(self, x, y, batch, seed):
        self.x, self.y, self.batch = x, y, batch
        self.rng = np.random.default_rng(seed)

    def epoch(self):
        order = self.rng.permutation(len(self.x))
        for i in range(len(self.x) // self.batch):
            idx = order[i * self.batch:(i + 1) * self.batch]
            yield self.x[idx], self.y[idx]


def worker(rank, port):
    import jax
    import jax.numpy as jnp
    from jax.experimental import multihost_utils
    from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(coordinator_address=f"127.0.0.1:{port}",
                               num_processes=NUM_HOSTS, process_id=rank)
    host = jax.process_index()

    def log(msg):
        print(f"[host {host}] {msg}", flush=True)

    mesh = Mesh(np.array(jax.devices()), ("data",))
    replicated = NamedSharding(mesh, P())
    data_sharding = NamedSharding(mesh, P("data"))

    def to_global_replicated(tree):
        return jax.tree.map(
            lambda a: jax.make_array_from_callback(a.shape, replicated, lambda idx: a[idx]), tree)

    # ---- model -----------------------------------------------------------
    def init_params(key):
        k1, k2, k3 = jax.random.split(key, 3)
        return {
            "dense1": {"w": jax.random.normal(k1, (FEATURES, HIDDEN)) * (1 / np.sqrt(FEATURES)),
                       "b": jnp.zeros((HIDDEN,))},
            "dense2": {"w": jax.random.normal(k2, (HIDDEN, HIDDEN)) * (1 / np.sqrt(HIDDEN)),
                       "b": jnp.zeros((HIDDEN,))},
            "head": {"w": jax.random.normal(k3, (HIDDEN, CLASSES)) * (1 / np.sqrt(HIDDEN)),
                     "b": jnp.zeros((CLASSES,))},
        }

    def apply(params, x):
        h = jax.nn.gelu(x @ params["dense1"]["w"] + params["dense1"]["b"])
        h = jax.nn.gelu(h @ params["dense2"]["w"] + params["dense2"]["b"])
        return h @ params["head"]["w"] + params["head"]["b"]

    def loss_fn(params, x, y):
        logits = apply(params, x)
        logp = jax.nn.log_softmax(logits)
        nll = -jnp.take_along_axis(logp, y[:, None], axis=1).mean()
        acc = (logits.argmax(-1) == y).mean()
        return nll, acc

    # ---- optimizer (adam, optax-style) -----------------------------------
    def adam_init(params):
        zeros = jax.tree.map(jnp.zeros_like, params)
        return {"mu": zeros, "nu": jax.tree.map(jnp.zeros_like, params), "count": jnp.zeros((), jnp.int32)}

    def adam_update(grads, state, lr=1e-3, b1=0.9, b2=0.999, eps=1e-8):
        count = state["count"] + 1
        mu = jax.tree.map(lambda m, g: b1 * m + (1 - b1) * g, state["mu"], grads)
        nu = jax.tree.map(lambda v, g: b2 * v + (1 - b2) * g * g, state["nu"], grads)
        c1 = 1 - b1 ** count.astype(jnp.float32)
        c2 = 1 - b2 ** count.astype(jnp.float32)
        updates = jax.tree.map(lambda m, v: -lr * (m / c1) / (jnp.sqrt(v / c2) + eps), mu, nu)
        return updates, {"mu": mu, "nu": nu, "count": count}

    @jax.jit
    def train_step(params, opt_state, x, y):
        (loss, acc), grads = jax.value_and_grad(loss_fn, has_aux=True)(params, x, y)
        updates, opt_state = adam_update(grads, opt_state)
        params = jax.tree.map(lambda p, u: p + u, params, updates)
        return params, opt_state, {"loss": loss, "acc": acc}

    @jax.jit
    def eval_batch(params, x, y):
        return loss_fn(params, x, y)

    def evaluate(host_params, vx, vy):
        local = jax.local_devices()[0]
        p = jax.device_put(host_params, local)
        losses, accs = [], []
        for i in range(0, len(vx), 256):
            l, a = eval_batch(p, jax.device_put(vx[i:i + 256], local), jax.device_put(vy[i:i + 256], local))
            losses.append(float(l))
            accs.append(float(a))
        return float(np.mean(losses)), float(np.mean(accs))

    def save_checkpoint(step, host_params, host_opt_state):
        """Write the checkpoint, then make sure every host sees it before continuing."""
        os.makedirs(CKPT_DIR, exist_ok=True)
        flat, _ = jax.tree_util.tree_flatten({"params": host_params, "opt": host_opt_state})
        tmp = os.path.join(CKPT_DIR, f"ckpt_{step}.npz.tmp")
        with open(tmp, "wb") as f:
            np.savez(f, *flat)
        os.replace(tmp, os.path.join(CKPT_DIR, f"ckpt_{step}.npz"))
        multihost_utils.sync_global_devices(f"checkpoint_{step}_committed")  # HANG: sync_only_rank0_calls

    # ---- data --------------------------------------------------------------
    x, y = make_host_dataset(host, STEPS_PER_EPOCH)
    batches = HostBatches(x, y, PER_HOST_BATCH, seed=host)
    val_x, val_y = make_host_dataset(99, 8, seed=0)

    params = to_global_replicated(jax.device_get(init_params(jax.random.PRNGKey(0))))
    opt_state = to_global_replicated(jax.device_get(adam_init(jax.device_get(params))))
    log(f"devices={jax.devices()} local_batch={PER_HOST_BATCH} global_batch={PER_HOST_BATCH * NUM_HOSTS}")

    step = 0
    best = float("inf")
    t0 = time.time()
    for epoch in range(EPOCHS):
        for bx, by in batches.epoch():
            gx = jax.make_array_from_process_local_data(data_sharding, bx)
            gy = jax.make_array_from_process_local_data(data_sharding, by)
            params, opt_state, metrics = train_step(params, opt_state, gx, gy)
            step += 1
            if step % LOG_EVERY == 0:
                log(f"epoch {epoch} step {step} loss {float(metrics['loss']):.4f} "
                    f"acc {float(metrics['acc']):.3f} ({time.time() - t0:.1f}s)")
            if step % EVAL_EVERY == 0 and jax.process_index() == 0:  # HANG: rank0_only_branch
                host_params = jax.device_get(params)
                val_loss, val_acc = evaluate(host_params, val_x, val_y)
                log(f"eval step {step}: val_loss {val_loss:.4f} val_acc {val_acc:.3f}")
                if val_loss < best:
                    best = val_loss
                    log(f"saving checkpoint for step {step}")
                    save_checkpoint(step, host_params, jax.device_get(opt_state))  # HANG: save_on_rank0
                    log("checkpoint saved")
    log(f"training done: {step} steps in {time.time() - t0:.1f}s, best val_loss {best:.4f}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--worker", action="store_true")
    ap.add_argument("--rank", type=int, default=0)
    ap.add_argument("--port", type=int, default=0)
    args = ap.parse_args()
    if args.worker:
        worker(args.rank, args.port)
    else:
        launch()
