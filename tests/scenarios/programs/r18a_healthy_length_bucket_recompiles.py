"""Transformer sentiment classifier in plain JAX, batches bucketed by length.

Source: https://github.com/jax-ml/jax/issues/13573
("Training loops very slowly through first epoch"): the first epoch takes about
twice as long as every later epoch, and nothing is wrong with the job.

Mechanism: to save padding, the loader sorts reviews by length, cuts the sorted
list into batches and pads each batch only to its own longest review (rounded
up to a multiple of 8), so batches come in a dozen different sequence lengths.
jax.jit specialises train_step on input shapes, so in epoch 1 each new length triggers a fresh trace and XLA
compile (several seconds each on a small CPU machine), and the epoch runs for
the better part of a minute with no output because progress is printed once
per epoch.
From epoch 2 on, every shape is in the compilation cache and an epoch takes a
couple of seconds.  The job finishes and exits 0.
"""
import time

import numpy as np
import jax
import jax.numpy as jnp

VOCAB = 4000
D_MODEL = 64
N_HEADS = 4
D_FF = 128
N_LAYERS = 2
CLASSES = 2
MIN_LEN, MAX_LEN = 12, 100
PAD_MULTIPLE = 8
NUM_REVIEWS = 1664
BATCH = 32
EPOCHS = 12
PAD = 0


# ---------------------------------------------------------------------------
# data
# ---------------------------------------------------------------------------
def make_reviews(n, seed=0):
    rng = np.random.default_rng(seed)
    positive = rng.choice(np.arange(10, VOCAB), 60, replace=False)
    negative = rng.choice(np.setdiff1d(np.arange(10, VOCAB), positive), 60, replace=False)
    reviews, labels = [], []
    for _ in range(n):
        length = int(rng.integers(MIN_LEN, MAX_LEN + 1))
        label = int(rng.integers(0, 2))
        toks = rng.integers(10, VOCAB, size=length)
        cue = positive if label else negative
        k = max(1, length // 16)
        toks[rng.choice(length, k, replace=False)] = rng.choice(cue, k)
        reviews.append(toks.astype(np.int32))
        labels.append(label if rng.random() > 0.1 else 1 - label)
    return reviews, np.array(labels, np.int32)


class BucketedBatches:
    """Sort by length, cut into batches, shuffle batch order, pad per batch (to a multiple of 8)."""

    def __init__(self, reviews, labels, batch_size, seed=0):
        self.reviews, self.labels = reviews, labels
        order = np.argsort([len(r) for r in reviews], kind="stable")
        self.batches = [order[i:i + batch_size] for i in range(0, len(order) - batch_size + 1, batch_size)]
        self.rng = np.random.default_rng(seed)

    def __len__(self):
        return len(self.batches)

    def __iter__(self):
        for bi in self.rng.permutation(len(self.batches)):
            idx = self.batches[bi]
            longest = max(len(self.reviews[i]) for i in idx)
            longest = -(-longest // PAD_MULTIPLE) * PAD_MULTIPLE
            tokens = np.full((len(idx), longest), PAD, np.int32)
            for row, i in enumerate(idx):
                tokens[row, :len(self.reviews[i])] = self.reviews[i]
            yield tokens, self.labels[idx]


# ---------------------------------------------------------------------------
# model
# ---------------------------------------------------------------------------
def init_params(key):
    keys = iter(jax.random.split(key, 4 + 6 * N_LAYERS))

    def dense(k, n_in, n_out):
        return {"w": jax.random.normal(k, (n_in, n_out)) / np.sqrt(n_in), "b": jnp.zeros(n_out)}

    params = {
        "embed": jax.random.normal(next(keys), (VOCAB, D_MODEL)) * 0.02,
        "pos": jax.random.normal(next(keys), (MAX_LEN + PAD_MULTIPLE, D_MODEL)) * 0.02,
        "head": dense(next(keys), D_MODEL, CLASSES),
        "layers": [],
    }
    for _ in range(N_LAYERS):
        params["layers"].append({
            "qkv": dense(next(keys), D_MODEL, 3 * D_MODEL),
            "out": dense(next(keys), D_MODEL, D_MODEL),
            "ff1": dense(next(keys), D_MODEL, D_FF),
            "ff2": dense(next(keys), D_FF, D_MODEL),
            "ln1": {"g": jnp.ones(D_MODEL), "b": jnp.zeros(D_MODEL)},
            "ln2": {"g": jnp.ones(D_MODEL), "b": jnp.zeros(D_MODEL)},
        })
    return params


def layer_norm(x, p):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / jnp.sqrt(var + 1e-5) * p["g"] + p["b"]


def attention(x, mask, p):
    b, t, _ = x.shape
    qkv = x @ p["qkv"]["w"] + p["qkv"]["b"]
    q, k, v = jnp.split(qkv.reshape(b, t, 3, N_HEADS, D_MODEL // N_HEADS), 3, axis=2)
    q, k, v = (a.squeeze(2).transpose(0, 2, 1, 3) for a in (q, k, v))
    scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(D_MODEL // N_HEADS)
    scores = jnp.where(mask[:, None, None, :], scores, -1e9)
    out = jax.nn.softmax(scores, -1) @ v
    out = out.transpose(0, 2, 1, 3).reshape(b, t, D_MODEL)
    return out @ p["out"]["w"] + p["out"]["b"]


def forward(params, tokens):
    mask = tokens != PAD
    t = tokens.shape[1]
    x = params["embed"][tokens] + params["pos"][:t]
    for p in params["layers"]:
        x = x + attention(layer_norm(x, p["ln1"]), mask, p)
        h = layer_norm(x, p["ln2"])
        h = jax.nn.gelu(h @ p["ff1"]["w"] + p["ff1"]["b"])
        x = x + h @ p["ff2"]["w"] + p["ff2"]["b"]
    pooled = (x * mask[..., None]).sum(1) / mask.sum(1, keepdims=True)
    return pooled @ params["head"]["w"] + params["head"]["b"]


def loss_fn(params, tokens, labels):
    logits = forward(params, tokens)
    nll = -jnp.take_along_axis(jax.nn.log_softmax(logits), labels[:, None], 1).mean()
    return nll, (logits.argmax(-1) == labels).mean()


def adamw_init(params):
    return {"m": jax.tree.map(jnp.zeros_like, params),
            "v": jax.tree.map(jnp.zeros_like, params),
            "t": jnp.zeros((), jnp.float32)}


def adamw_update(params, grads, state, lr=3e-4, b1=0.9, b2=0.98, eps=1e-8, wd=0.01):
    t = state["t"] + 1
    m = jax.tree.map(lambda m_, g: b1 * m_ + (1 - b1) * g, state["m"], grads)
    v = jax.tree.map(lambda v_, g: b2 * v_ + (1 - b2) * g * g, state["v"], grads)
    params = jax.tree.map(
        lambda p, m_, v_: p - lr * ((m_ / (1 - b1 ** t)) / (jnp.sqrt(v_ / (1 - b2 ** t)) + eps) + wd * p),
        params, m, v)
    return params, {"m": m, "v": v, "t": t}


@jax.jit
def train_step(params, opt_state, tokens, labels):
    (loss, acc), grads = jax.value_and_grad(loss_fn, has_aux=True)(params, tokens, labels)
    params, opt_state = adamw_update(params, grads, opt_state)
    return params, opt_state, loss, acc


def main():
    reviews, labels = make_reviews(NUM_REVIEWS)
    data = BucketedBatches(reviews, labels, BATCH)
    params = init_params(jax.random.PRNGKey(0))
    opt_state = adamw_init(params)
    n_params = sum(p.size for p in jax.tree.leaves(params))
    print(f"reviews={NUM_REVIEWS} batches/epoch={len(data)} params={n_params}", flush=True)
    t_start = time.time()
    for epoch in range(1, EPOCHS + 1):
        t0 = time.time()
        loss_sum, acc_sum, n = 0.0, 0.0, 0
        for tokens, y in data:
            params, opt_state, loss, acc = train_step(params, opt_state, tokens, y)
            loss_sum += loss
            acc_sum += acc
            n += 1
        print(f"epoch {epoch}/{EPOCHS}: loss {float(loss_sum) / n:.4f} acc {float(acc_sum) / n:.3f} "
              f"time {time.time() - t0:.1f}s", flush=True)
    print(f"done in {time.time() - t_start:.1f}s", flush=True)


if __name__ == "__main__":
    main()
