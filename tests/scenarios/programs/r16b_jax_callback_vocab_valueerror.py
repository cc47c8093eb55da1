"""Two-tower retrieval model in plain JAX with a host-side id->row lookup.

Item ids in the click log are raw catalogue ids (large, sparse integers).  The
jitted train step maps them to embedding-table rows with a host dictionary via
jax.pure_callback, then trains user/item towers with an in-batch softmax loss and
a hand-written Adam update.  Batches that contain items missing from the
vocabulary are supposed to be skipped: the loop wraps the step in
`except jax.errors.JaxRuntimeError` (the documented type of a runtime failure of
a compiled computation) and moves on.

Mechanism: an exception raised inside a pure_callback under jit is reported as
jax.errors.JaxRuntimeError only on the slow (first-call) path.  Once the jitted
step has run successfully, later calls go through the C++ fast path, which turns
the failed callback status into a plain ValueError("INTERNAL: CpuCallback error
... KeyError ...").  The except clause does not match, and the job dies at the
first batch that carries an unknown item id (step 30) instead of skipping it.

From https://github.com/jax-ml/jax/issues/34083 (since jax 0.7.2 an exception
raised inside jax.pure_callback under jit surfaces as a plain ValueError instead
of JaxRuntimeError, but only when the first call of the jitted function
succeeded; libraries that catch the runtime error type, e.g. Equinox error_if,
break).
"""
import time

import numpy as np
import jax
import jax.numpy as jnp

NUM_USERS = 2000
NUM_ITEMS = 5000
DIM = 32
BATCH = 256
STEPS = 200

rng = np.random.default_rng(0)
# raw catalogue ids -> dense row index
catalogue_ids = rng.choice(10_000_000, size=NUM_ITEMS, replace=False)
vocab = {int(cid): row for row, cid in enumerate(catalogue_ids)}


def lookup_rows(raw_ids):
    raw_ids = np.asarray(raw_ids)
    rows = [vocab[int(i)] for i in raw_ids]  # HANG: vocab_lookup_keyerror
    return np.asarray(rows, dtype=np.int32)


def init_params(key):
    k1, k2, k3, k4 = jax.random.split(key, 4)
    return {
        "user_emb": 0.05 * jax.random.normal(k1, (NUM_USERS, DIM)),
        "item_emb": 0.05 * jax.random.normal(k2, (NUM_ITEMS, DIM)),
        "user_w": jax.random.normal(k3, (DIM, DIM)) / np.sqrt(DIM),
        "item_w": jax.random.normal(k4, (DIM, DIM)) / np.sqrt(DIM),
    }


def loss_fn(params, users, item_rows):
    u = jnp.tanh(params["user_emb"][users] @ params["user_w"])
    v = jnp.tanh(params["item_emb"][item_rows] @ params["item_w"])
    logits = u @ v.T / 0.1
    labels = jnp.arange(users.shape[0])
    logp = jax.nn.log_softmax(logits, axis=-1)
    return -jnp.mean(logp[labels, labels])


def adam_init(params):
    zeros = jax.tree_util.tree_map(jnp.zeros_like, params)
    return {"m": zeros, "v": zeros, "t": jnp.zeros((), jnp.int32)}


@jax.jit
def train_step(params, opt, users, raw_item_ids):
    item_rows = jax.pure_callback(
        lookup_rows, jax.ShapeDtypeStruct(raw_item_ids.shape, jnp.int32), raw_item_ids
    )
    loss, grads = jax.value_and_grad(loss_fn)(params, users, item_rows)
    t = opt["t"] + 1
    m = jax.tree_util.tree_map(lambda m, g: 0.9 * m + 0.1 * g, opt["m"], grads)
    v = jax.tree_util.tree_map(lambda v, g: 0.999 * v + 0.001 * g * g, opt["v"], grads)
    lr = 3e-3 * jnp.sqrt(1 - 0.999 ** t) / (1 - 0.9 ** t)
    params = jax.tree_util.tree_map(
        lambda p, m, v: p - lr * m / (jnp.sqrt(v) + 1e-8), params, m, v
    )
    return params, {"m": m, "v": v, "t": t}, loss


def click_batches():
    for step in range(STEPS):
        users = rng.integers(0, NUM_USERS, size=BATCH)
        items = catalogue_ids[(users * 7 + rng.integers(0, 3, size=BATCH)) % NUM_ITEMS].copy()
        if step == 30:
            # a new product went live after the vocabulary snapshot was taken
            items[17] = 10_000_123
        yield step, users.astype(np.int32), items.astype(np.int32)


def main():
    params = init_params(jax.random.PRNGKey(0))
    opt = adam_init(params)
    skipped = 0
    t0 = time.time()
    for step, users, raw_items in click_batches():
        try:
            new_params, new_opt, loss = train_step(params, opt, users, raw_items)  # HANG: train_step_raises_valueerror
            loss = float(loss)
        except jax.errors.JaxRuntimeError as e:
            skipped += 1
            print(f"step {step}: skipping batch with unknown item ids ({e.__class__.__name__})", flush=True)
            continue
        params, opt = new_params, new_opt
        if step % 5 == 0:
            print(f"step {step:4d} loss={loss:.4f} skipped={skipped} t={time.time() - t0:.1f}s", flush=True)
    print(f"done: skipped {skipped} batches", flush=True)


if __name__ == "__main__":
    main()
