"""Source: https://github.com/jax-ml/jax/issues/3382 (PyTorch-style data loader with workers freezes with JAX)
A small JAX regression model is trained on batches produced by a multiprocessing pool of
augmentation workers. The pool is created with the default (fork) start method after JAX has
already run computations, and the augmentation function itself uses jax.numpy, so each forked
worker touches the JAX runtime it inherited mid-flight while the training loop waits for batches."""

import ctypes
import multiprocessing as mp
import signal

import jax
import jax.numpy as jnp
import numpy as np

NOISE = 0.05


def _worker_init():
    ctypes.CDLL("libc.so.6").prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG: die with the trainer


def augment(seed: int):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(64, 16)).astype(np.float32)
    xj = jnp.asarray(x)  # HANG: augment
    xj = xj + NOISE * jnp.tanh(xj)  # random-ish jitter, done "on device"
    y = xj.sum(axis=1, keepdims=True)
    return np.asarray(xj), np.asarray(y)


def init_params(key):
    k1, k2 = jax.random.split(key)
    return {
        "w1": jax.random.normal(k1, (16, 32)) * 0.1,
        "w2": jax.random.normal(k2, (32, 1)) * 0.1,
    }


def loss_fn(params, x, y):
    h = jnp.tanh(x @ params["w1"])
    return jnp.mean((h @ params["w2"] - y) ** 2)


@jax.jit
def train_step(params, x, y):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    return jax.tree_util.tree_map(lambda p, g: p - 0.05 * g, params, grads), loss


def main() -> None:
    params = init_params(jax.random.PRNGKey(0))
    # warm-up step on a dummy batch so the first real step is not slowed by compilation
    params, loss = train_step(params, jnp.zeros((64, 16)), jnp.zeros((64, 1)))
    print(f"compiled; warm-up loss {float(loss):.4f}", flush=True)
    with mp.Pool(2, initializer=_worker_init) as pool:
        for step, (x, y) in enumerate(pool.imap(augment, range(200))):  # HANG: imap
            params, loss = train_step(params, x, y)
            if step % 10 == 0:
                print(f"step {step} loss {float(loss):.4f}", flush=True)
    print("training done", flush=True)


if __name__ == "__main__":
    main()
