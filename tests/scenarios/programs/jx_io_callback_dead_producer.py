"""Source: https://github.com/blackjax-devs/blackjax/pull/650 (host callbacks fetching data via
io_callback) and https://github.com/jax-ml/jax/issues/25861 (a jitted loop stuck in a callback)
Mechanism: a jitted step pulls fresh noise from a host queue with jax.experimental.io_callback;
the thread that fills the queue died on a bad seed file, so the callback's queue.get() waits
forever and the step (and block_until_ready in the main thread) never returns."""

import queue
import threading

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import io_callback

noise_queue: "queue.Queue[np.ndarray]" = queue.Queue(maxsize=4)


def noise_producer() -> None:
    for seed in range(1000):
        if seed == 3:
            raise OSError(f"noise table {seed}: truncated file")  # HANG: raise
        noise_queue.put(np.random.default_rng(seed).normal(size=8).astype(np.float32))


def next_noise(step):
    return noise_queue.get()  # HANG: get


@jax.jit
def train_step(w, step):
    noise = io_callback(next_noise, jax.ShapeDtypeStruct((8,), jnp.float32), step, ordered=True)
    loss, grad = jax.value_and_grad(lambda w: jnp.sum((w - noise) ** 2))(w)
    return w - 0.1 * grad, loss


def main() -> None:
    threading.Thread(target=noise_producer, daemon=True, name="noise-producer").start()
    w = jnp.zeros(8)
    for step in range(20):
        w, loss = train_step(w, step)
        print(f"step {step} loss {float(loss):.4f}", flush=True)  # HANG: wait


if __name__ == "__main__":
    main()
