"""Source: https://github.com/jax-ml/jax/issues/24255 (pure_callback hangs; see also #25861)
Mechanism: a jitted step reports its loss to the host through jax.pure_callback; the callback
takes the metrics lock. The training loop holds that same lock around the step (to keep the
checkpoint thread out) and blocks on the result: the callback can never get the lock."""

import threading

import jax
import jax.numpy as jnp
import numpy as np

metrics_lock = threading.Lock()
history = []


def record_loss(loss):
    with metrics_lock:  # HANG: callback-lock
        history.append(float(loss))
    return np.asarray(loss, dtype=np.float32)


@jax.jit
def train_step(w, x, y):
    loss, grad = jax.value_and_grad(lambda w: jnp.mean((x @ w - y) ** 2))(w)
    loss = jax.pure_callback(record_loss, jax.ShapeDtypeStruct((), jnp.float32), loss)
    return w - 0.1 * grad, loss


def main() -> None:
    key = jax.random.PRNGKey(0)
    x = jax.random.normal(key, (64, 8))
    y = x @ jnp.arange(8.0)
    w = jnp.zeros(8)
    for step in range(20):
        with metrics_lock:  # keep the checkpoint thread from reading half-updated weights
            w, loss = train_step(w, x, y)
            loss.block_until_ready()  # HANG: wait
        print(f"step {step} loss {float(loss):.4f}", flush=True)


if __name__ == "__main__":
    main()
