"""MLP classifier with dropout whose first checkpoint dies on a typed PRNG key in the state.

Source: https://github.com/google/flax/issues/4509
  "my recipe for checkpointing breaks when my model contains an LSTM ... Calling
  savemodel(model, path) throws: TypeError: JAX array with PRNGKey dtype cannot be converted
  to a NumPy array" (the model state carried an RNG key of the new typed-key kind)

What happens:
  The training state is a pytree {params, momentum, dropout_rng, step}. The dropout stream is
  a new-style typed key (jax.random.key, dtype key<fry>) that the jitted train step splits and
  carries forward, so training runs fine and logs its loss. Every 40 steps a hand-written
  checkpoint helper flattens the state with jax.tree_util and converts every leaf with
  np.asarray() before np.savez(). For the typed key leaf, JAX's PRNGKeyArray.__array__ raises
  TypeError("JAX array with PRNGKey dtype cannot be converted to a NumPy array ..."), inside
  the helper (_leaf_to_numpy, called by save_checkpoint), not on the train step's line. The
  exception is not caught, so the job dies with exit code 1 at the first checkpoint.
"""
import os
import tempfile
import time

import numpy as np
import jax
import jax.numpy as jnp

CKPT_EVERY = 40
TOTAL_STEPS = 200


def make_dataset(n=4096, dim=20, classes=4, seed=0):
    rng = np.random.default_rng(seed)
    centers = rng.normal(scale=0.35, size=(classes, dim))
    y = rng.integers(0, classes, size=n)
    x = centers[y] + rng.normal(size=(n, dim))
    return x.astype(np.float32), y.astype(np.int32)


def batches(x, y, bs, seed=0):
    rng = np.random.default_rng(seed)
    while True:
        idx = rng.permutation(len(x))
        for i in range(0, len(x) - bs + 1, bs):
            j = idx[i:i + bs]
            yield x[j], y[j]


def init_params(key, sizes):
    params = []
    for k, (m, n) in zip(jax.random.split(key, len(sizes) - 1), zip(sizes[:-1], sizes[1:])):
        params.append({"w": jax.random.normal(k, (m, n)) * jnp.sqrt(2.0 / m), "b": jnp.zeros((n,))})
    return params


def forward(params, x, key, rate=0.2, train=True):
    for i, layer in enumerate(params):
        x = x @ layer["w"] + layer["b"]
        if i < len(params) - 1:
            x = jax.nn.relu(x)
            if train:
                key, sub = jax.random.split(key)
                keep = jax.random.bernoulli(sub, 1.0 - rate, x.shape)
                x = jnp.where(keep, x / (1.0 - rate), 0.0)
    return x


@jax.jit
def train_step(state, x, y):
    rng, drop_key = jax.random.split(state["dropout_rng"])

    def loss_fn(p):
        logits = forward(p, x, drop_key)
        return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), y[:, None], axis=1))

    loss, grads = jax.value_and_grad(loss_fn)(state["params"])
    mom = jax.tree.map(lambda m, g: 0.9 * m + g, state["momentum"], grads)
    params = jax.tree.map(lambda p, m: p - 0.01 * m, state["params"], mom)
    return {"params": params, "momentum": mom, "dropout_rng": rng, "step": state["step"] + 1}, loss


def _leaf_to_numpy(leaf):
    return np.asarray(jax.device_get(leaf))  # HANG: typed_key_to_numpy


def save_checkpoint(state, ckpt_dir):
    flat, _ = jax.tree_util.tree_flatten_with_path(state)
    arrays = {jax.tree_util.keystr(path): _leaf_to_numpy(leaf) for path, leaf in flat}  # HANG: ckpt_flatten
    step = int(state["step"])
    path = os.path.join(ckpt_dir, f"ckpt_{step:06d}.npz")
    np.savez(path, **arrays)
    return path


def main():
    ckpt_dir = tempfile.mkdtemp(prefix="r20a_ckpt_")
    x, y = make_dataset()
    root = jax.random.key(42)  # new-style typed key
    pkey, dkey = jax.random.split(root)
    params = init_params(pkey, [20, 128, 128, 4])
    state = {"params": params,
             "momentum": jax.tree.map(jnp.zeros_like, params),
             "dropout_rng": dkey,
             "step": jnp.array(0, jnp.int32)}
    print(f"checkpoints -> {ckpt_dir}", flush=True)
    data = batches(x, y, bs=128)
    t0 = time.time()
    for i in range(1, TOTAL_STEPS + 1):
        xb, yb = next(data)
        state, loss = train_step(state, xb, yb)
        if i % 5 == 0:
            print(f"step {i} loss {float(loss):.4f} ({time.time() - t0:.1f}s)", flush=True)
        time.sleep(0.08)
        if i % CKPT_EVERY == 0:
            print(f"saving checkpoint at step {i}", flush=True)
            path = save_checkpoint(state, ckpt_dir)  # HANG: save_checkpoint_call
            print(f"saved {path}", flush=True)
    print("training finished", flush=True)


if __name__ == "__main__":
    main()
