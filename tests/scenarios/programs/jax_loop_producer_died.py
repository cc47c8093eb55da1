"""A JAX training loop fed by a loader thread through a queue: the loader dies of an exception
on a corrupt record, and the jitted loop waits for its next batch without a timeout. The loop
prints nothing per step (only the instrumentation sees its steps)."""

import queue
import threading

import jax
import jax.numpy as jnp
import numpy as np

batches: queue.Queue = queue.Queue(maxsize=4)


def load() -> None:
    rng = np.random.default_rng(0)
    for index in range(100):
        if index == 12:
            raise ValueError("corrupt record 12 in shard-00003")  # HANG: raise
        batches.put(rng.standard_normal((16, 8), dtype=np.float32))


@jax.jit
def train_step(w, x):
    def loss(w):
        return jnp.mean((x @ w - 1.0) ** 2)

    return w - 0.05 * jax.grad(loss)(w)


def main() -> None:
    threading.Thread(target=load, name="loader", daemon=True).start()
    w = jnp.zeros((8, 1))
    print("training", flush=True)
    for _ in range(100):
        x = batches.get()  # HANG: get
        w = train_step(w, x)
    print("done", float(w.sum()))


if __name__ == "__main__":
    main()
