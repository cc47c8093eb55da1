"""Source: https://github.com/jax-ml/jax/issues/1832 (JAX on CPU much slower per step than
expected; slow, but it runs)
Mechanism (healthy): a small MLP trained with a jitted step on CPU where each step also reads a
slow host-side batch (about 3 s per step, stood in for by sleep). Progress is slow but steady:
one line every ~3 s for 8 steps, then it ends."""

import time

import jax
import jax.numpy as jnp


def load_batch(step: int):
    time.sleep(3.0)  # a slow network filesystem: every batch takes ~3 s to arrive
    key = jax.random.PRNGKey(step)
    x = jax.random.normal(key, (128, 32))
    return x, jnp.sin(x.sum(axis=1, keepdims=True))


def loss_fn(params, x, y):
    h = jnp.tanh(x @ params["w1"])
    return jnp.mean((h @ params["w2"] - y) ** 2)


@jax.jit
def train_step(params, x, y):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    return jax.tree.map(lambda p, g: p - 0.05 * g, params, grads), loss


def main() -> None:
    key = jax.random.PRNGKey(0)
    params = {"w1": jax.random.normal(key, (32, 64)) * 0.1, "w2": jnp.zeros((64, 1))}
    for step in range(8):
        x, y = load_batch(step)
        params, loss = train_step(params, x, y)
        print(f"step {step} loss {float(loss):.4f}", flush=True)
    print("done", flush=True)


if __name__ == "__main__":
    main()
