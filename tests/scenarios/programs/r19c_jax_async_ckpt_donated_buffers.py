"""JAX training fails: a hand-written async checkpointer reads parameters that the next jitted step donated.

Source: https://github.com/google/orbax/issues/626
  "We are getting 'Array has been deleted' errors. It seems as if the async checkpointer is trying
  to copy a jax.Array from device to memory, but that array is no longer available."

What happens:
  The training step is jitted with donate_argnums=(0,) so XLA reuses the TrainState buffers in
  place.  Checkpoints are written by a small hand-rolled AsyncCheckpointer (the Orbax idea done by
  hand): save() only captures *references* to the jax.Arrays and hands them to a background
  ThreadPoolExecutor, which writes a metadata file and then converts each leaf with np.asarray()
  and writes it with np.savez_compressed().  Unlike Orbax, it skips the blocking device-to-host
  copy before returning.
  The main thread immediately calls train_step(state, ...) again, which donates -- and thereby
  deletes -- exactly those arrays.  The writer thread then hits a deleted buffer and raises
  `RuntimeError: Array has been deleted with shape=float32[...]`.  The error sits in the Future
  until the next save() calls wait_until_finished(), which re-raises it in the main thread; the
  job exits non-zero at the next save, 50 steps after the checkpoint that actually failed.
"""
import concurrent.futures
import functools
import json
import os
import tempfile
import time

os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")
import jax
import jax.numpy as jnp
import numpy as np

CKPT_DIR = tempfile.mkdtemp(prefix="r19c_ckpt_")
STEPS = 300
SAVE_EVERY = 50
BATCH = 64


class AsyncCheckpointer:
    """Writes pytrees of jax.Arrays in a background thread (one save in flight)."""

    def __init__(self, directory):
        self.directory = directory
        self.pool = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="ckpt")
        self.pending = None

    def _write(self, step, leaves, treedef_str):
        path = os.path.join(self.directory, f"step_{step:06d}.tmp")
        os.makedirs(path, exist_ok=True)
        meta = {"step": step, "treedef": treedef_str,
                "shapes": [list(l.shape) for l in leaves],
                "dtypes": [str(l.dtype) for l in leaves]}
        with open(os.path.join(path, "metadata.json"), "w") as f:
            json.dump(meta, f)
            f.flush()
            os.fsync(f.fileno())
        for i, leaf in enumerate(leaves):
            host = np.asarray(leaf)   # HANG: read_donated_array
            np.savez_compressed(os.path.join(path, f"leaf_{i:03d}.npz"), value=host)
        os.replace(path, path[:-4])
        return step

    def save(self, step, tree):
        self.wait_until_finished()
        leaves, treedef = jax.tree_util.tree_flatten(tree)
        # no blocking device->host copy here: the thread reads the live arrays later
        self.pending = self.pool.submit(self._write, step, leaves, str(treedef))   # HANG: async_save_submit

    def wait_until_finished(self):
        if self.pending is not None:
            done = self.pending.result()   # HANG: reraise_in_main
            print(f"[ckpt] step {done} committed", flush=True)
            self.pending = None


def init_state(key, sizes=(16, 384, 384, 4)):
    params = []
    for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
        k = jax.random.fold_in(key, i)
        params.append({"w": jax.random.normal(k, (a, b)) / np.sqrt(a), "b": jnp.zeros(b)})
    zeros = jax.tree.map(jnp.zeros_like, params)
    return {"params": params, "m": zeros, "v": jax.tree.map(jnp.zeros_like, params),
            "step": jnp.zeros((), jnp.int32)}


def forward(params, x):
    for layer in params[:-1]:
        x = jax.nn.gelu(x @ layer["w"] + layer["b"])
    return x @ params[-1]["w"] + params[-1]["b"]


def loss_fn(params, x, y):
    logits = forward(params, x)
    return -jnp.mean(jnp.sum(jax.nn.log_softmax(logits) * jax.nn.one_hot(y, 4), axis=-1))


@functools.partial(jax.jit, donate_argnums=(0,))
def train_step(state, x, y, lr=1e-3, b1=0.9, b2=0.999):
    loss, g = jax.value_and_grad(loss_fn)(state["params"], x, y)
    t = state["step"] + 1
    m = jax.tree.map(lambda m, g: b1 * m + (1 - b1) * g, state["m"], g)
    v = jax.tree.map(lambda v, g: b2 * v + (1 - b2) * g * g, state["v"], g)
    params = jax.tree.map(
        lambda p, m, v: p - lr * (m / (1 - b1 ** t)) / (jnp.sqrt(v / (1 - b2 ** t)) + 1e-8),
        state["params"], m, v)
    return {"params": params, "m": m, "v": v, "step": t}, loss


def batches(seed=0):
    rng = np.random.default_rng(seed)
    centers = rng.normal(size=(4, 16)) * 0.6
    while True:
        y = rng.integers(0, 4, size=BATCH)
        x = centers[y] + rng.normal(size=(BATCH, 16))
        yield x.astype(np.float32), y.astype(np.int32)


def main():
    state = init_state(jax.random.PRNGKey(0))
    ckpt = AsyncCheckpointer(CKPT_DIR)
    data = batches()
    t0 = time.time()
    for i in range(1, STEPS + 1):
        x, y = next(data)
        state, loss = train_step(state, x, y)   # HANG: donates_state
        if i % 10 == 0:
            print(f"step {i} loss {float(loss):.4f} ({time.time() - t0:.1f}s)", flush=True)
        if i % SAVE_EVERY == 0:
            ckpt.save(i, state)   # HANG: save_then_step
        time.sleep(0.03)   # host-side input work of a real job
    ckpt.wait_until_finished()
    print("training finished", flush=True)


if __name__ == "__main__":
    main()
