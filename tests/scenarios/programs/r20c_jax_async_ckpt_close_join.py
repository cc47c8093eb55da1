"""JAX MLP training whose async checkpoint writer never shuts down: close() joins a thread parked in queue.get().

Source: https://github.com/tensorflow/tensorflow/pull/8981
  Review of a writer-thread shutdown fix (close() = worker.stop(); flush(); worker.join()):
  "Won't this block forever if `self._worker` is blocked in `self._queue.get()`? ...
  The standard approach here would be to send a sentinel element."

What happens:
  The script trains a small MLP regressor with JAX and saves checkpoints asynchronously:
  `AsyncCheckpointWriter.save()` copies the params to host and puts them on a queue.Queue;
  a background (non-daemon) writer thread loops `while not self._stop.is_set(): item =
  self._queue.get(); write(item)`.  After the last checkpoint is written the writer thread
  goes back to the top of the loop, sees no stop request yet, and parks in the blocking
  `self._queue.get()`.  Training ends, a final evaluation runs, and the main thread calls
  `writer.close()`, which sets the stop Event and then `self._thread.join()`.  The stop
  flag is only checked between items, nobody ever puts another item (no sentinel), so the
  writer sleeps in queue.get() forever and the main thread waits in Thread.join() forever.
  0% CPU, no further output, the process never exits (and even if join were skipped the
  interpreter would hang at exit, joining the non-daemon thread).
"""
import os

# shared 2-core box: keep XLA on a single compute thread
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import queue
import shutil
import tempfile
import threading
import time

import numpy as np
import jax
import jax.numpy as jnp


class AsyncCheckpointWriter:
    """Writes param pytrees to <dir>/ckpt_<step>.npz on a background thread."""

    def __init__(self, directory, keep=3):
        self.directory = directory
        self.keep = keep
        self._queue = queue.Queue(maxsize=4)
        self._stop = threading.Event()
        self._written = []
        self._thread = threading.Thread(target=self._run, name="ckpt-writer")
        self._thread.start()

    def save(self, step, params):
        host_params = jax.device_get(params)  # snapshot before the next update
        self._queue.put((step, host_params))

    def _run(self):
        while not self._stop.is_set():
            step, tree = self._queue.get()  # HANG: writer_parked_in_queue_get
            self._write(step, tree)

    def _write(self, step, tree):
        flat, _ = jax.tree_util.tree_flatten_with_path(tree)
        arrays = {jax.tree_util.keystr(k): np.asarray(v) for k, v in flat}
        tmp = os.path.join(self.directory, f".ckpt_{step}.tmp.npz")
        final = os.path.join(self.directory, f"ckpt_{step}.npz")
        np.savez(tmp, **arrays)
        os.replace(tmp, final)
        self._written.append(final)
        while len(self._written) > self.keep:
            os.remove(self._written.pop(0))
        print(f"[ckpt-writer] wrote {os.path.basename(final)} ({len(arrays)} arrays)", flush=True)

    def close(self):
        # ask the writer to stop and wait for it to finish what it is doing
        self._stop.set()
        self._thread.join()  # HANG: close_joins_writer_thread


def init_mlp(key, sizes):
    params = []
    for din, dout in zip(sizes[:-1], sizes[1:]):
        key, wk = jax.random.split(key)
        params.append({"w": jax.random.normal(wk, (din, dout)) * jnp.sqrt(2.0 / din),
                       "b": jnp.zeros((dout,))})
    return params


def forward(params, x):
    for layer in params[:-1]:
        x = jax.nn.gelu(x @ layer["w"] + layer["b"])
    last = params[-1]
    return (x @ last["w"] + last["b"]).squeeze(-1)


def loss_fn(params, x, y):
    return jnp.mean((forward(params, x) - y) ** 2)


@jax.jit
def train_step(params, opt_state, x, y, lr):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    # momentum SGD
    opt_state = jax.tree_util.tree_map(lambda m, g: 0.9 * m + g, opt_state, grads)
    params = jax.tree_util.tree_map(lambda p, m: p - lr * m, params, opt_state)
    return params, opt_state, loss


@jax.jit
def eval_batch(params, x, y):
    return loss_fn(params, x, y)


def make_data(rng, n, dim):
    x = rng.standard_normal((n, dim)).astype(np.float32)
    w_true = np.linspace(-1.0, 1.0, dim).astype(np.float32)
    y = np.sin(x @ w_true) + 0.1 * rng.standard_normal(n).astype(np.float32)
    return x, y.astype(np.float32)


def main():
    workdir = tempfile.mkdtemp(prefix="r20c_ckpt_")
    rng = np.random.default_rng(0)
    dim, batch = 32, 128
    x_train, y_train = make_data(rng, 8192, dim)
    x_val, y_val = make_data(rng, 2048, dim)

    params = init_mlp(jax.random.PRNGKey(0), [dim, 128, 128, 1])
    opt_state = jax.tree_util.tree_map(jnp.zeros_like, params)
    writer = AsyncCheckpointWriter(workdir)

    total_steps, ckpt_every, log_every = 120, 40, 10
    t0 = time.time()
    for step in range(1, total_steps + 1):
        idx = rng.integers(0, len(x_train), batch)
        params, opt_state, loss = train_step(params, opt_state, x_train[idx], y_train[idx], 0.01)
        if step % log_every == 0:
            print(f"step {step} loss {float(loss):.4f} ({time.time() - t0:.1f}s)", flush=True)
        if step % ckpt_every == 0:
            writer.save(step, params)
        time.sleep(0.05)  # stand-in for host-side input work

    print("training done, running final evaluation", flush=True)
    val_losses = []
    for i in range(0, len(x_val), 256):
        val_losses.append(float(eval_batch(params, x_val[i:i + 256], y_val[i:i + 256])))
        time.sleep(0.1)
    print(f"final val loss {np.mean(val_losses):.4f}", flush=True)

    print("closing checkpoint writer", flush=True)
    writer.close()  # HANG: main_waits_in_close
    print(f"checkpoints in {workdir}: {sorted(os.listdir(workdir))}", flush=True)
    shutil.rmtree(workdir, ignore_errors=True)
    print("done", flush=True)


if __name__ == "__main__":
    main()
