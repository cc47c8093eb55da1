"""Source: https://github.com/jax-ml/jax/issues/5778 (a host-callback wait staged inside jit hangs)
A jitted train step runs 8 inner SGD updates in a fori_loop and reports each inner loss to the host
through jax.experimental.io_callback, which puts it in a bounded metrics queue. The training loop
drains that queue only every 10 steps, after block_until_ready on the step's result; once the
queue is full, the callback's put waits for the loop and the loop waits for the step."""

import queue

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import io_callback

LOG_EVERY = 10
INNER_STEPS = 8
metrics: "queue.Queue[tuple[int, float]]" = queue.Queue(maxsize=64)


def record_metric(step, loss):
    metrics.put((int(step), float(loss)))  # HANG: put


def loss_fn(w, x, y):
    return jnp.mean((jnp.tanh(x @ w) - y) ** 2)


@jax.jit
def train_step(w, x, y, step):
    def inner(i, w):
        loss, g = jax.value_and_grad(loss_fn)(w, x, y)
        io_callback(record_metric, None, step * INNER_STEPS + i, loss, ordered=True)
        return w - 0.05 * g

    return jax.lax.fori_loop(0, INNER_STEPS, inner, w)


def main() -> None:
    rng = np.random.default_rng(0)
    x = jnp.asarray(rng.normal(size=(128, 16)).astype(np.float32))
    y = jnp.asarray(np.sign(rng.normal(size=(128, 4))).astype(np.float32))
    w = jnp.zeros((16, 4))
    for step in range(100):
        w = train_step(w, x, y, step)
        jax.block_until_ready(w)  # HANG: wait
        print(f"step {step} done", flush=True)
        if step % LOG_EVERY == LOG_EVERY - 1:
            drained = []
            while not metrics.empty():
                drained.append(metrics.get()[1])
            print(f"step {step}: mean inner loss {np.mean(drained):.4f}", flush=True)


if __name__ == "__main__":
    main()
