"""Source: https://github.com/pyro-ppl/numpyro/issues/956 (skip the update when the JAX loss is NaN)
A small JAX model is fit with Adam written by hand. When a step's loss is not finite the loop does
not apply it but retries the same batch with half the learning rate, assuming an overflow. Batch 7
holds a record with a missing feature (NaN), so its loss is NaN at any learning rate and the loop
retries forever without printing anything."""

import jax
import jax.numpy as jnp
import numpy as np


def make_batches(n: int = 40):
    rng = np.random.default_rng(0)
    out = []
    for i in range(n):
        x = rng.normal(size=(32, 8)).astype(np.float32)
        if i == 7:
            x[5, 3] = np.nan  # HANG: nan
        y = (x[:, :4].sum(axis=1) > 0).astype(np.float32)
        out.append((x, y))
    return out


def loss_fn(params, x, y):
    logits = jnp.tanh(x @ params["w1"]) @ params["w2"]
    return jnp.mean(jnp.logaddexp(0.0, logits[:, 0]) - y * logits[:, 0])


@jax.jit
def adam_step(params, m, v, t, x, y, lr):
    loss, g = jax.value_and_grad(loss_fn)(params, x, y)
    m = jax.tree_util.tree_map(lambda m, g: 0.9 * m + 0.1 * g, m, g)
    v = jax.tree_util.tree_map(lambda v, g: 0.999 * v + 0.001 * g * g, v, g)
    mh = jax.tree_util.tree_map(lambda m: m / (1 - 0.9**t), m)
    vh = jax.tree_util.tree_map(lambda v: v / (1 - 0.999**t), v)
    new = jax.tree_util.tree_map(lambda p, a, b: p - lr * a / (jnp.sqrt(b) + 1e-8), params, mh, vh)
    return new, m, v, loss


def main() -> None:
    k1, k2 = jax.random.split(jax.random.PRNGKey(0))
    params = {"w1": jax.random.normal(k1, (8, 16)) * 0.3, "w2": jax.random.normal(k2, (16, 1)) * 0.3}
    m = jax.tree_util.tree_map(jnp.zeros_like, params)
    v = jax.tree_util.tree_map(jnp.zeros_like, params)
    t = 1
    for epoch in range(3):
        for i, (x, y) in enumerate(make_batches()):
            lr = 1e-2
            new, m2, v2, loss = adam_step(params, m, v, t, x, y, lr)
            while not np.isfinite(float(loss)):  # HANG: retry
                lr = lr * 0.5  # overflow? back off and try the batch again
                new, m2, v2, loss = adam_step(params, m, v, t, x, y, lr)
            params, m, v, t = new, m2, v2, t + 1
            print(f"epoch {epoch} batch {i} loss {float(loss):.4f} lr {lr:g}", flush=True)


if __name__ == "__main__":
    main()
