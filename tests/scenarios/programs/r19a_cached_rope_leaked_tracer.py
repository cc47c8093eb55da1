"""Tiny causal transformer LM in plain JAX whose rotary-embedding tables are memoised
with functools.lru_cache -- the cache is filled while `train_step` is being traced.

Source: https://github.com/jax-ml/jax/pull/24818
  ("The caching used for the shape_poly.CachingShapeEvaluator leads to leaked tracer
  errors. This is because the `lru_cache` is attached to ... evaluate and persists for
  the duration of the program.")

What happens:
  `rope_tables(seq_len, head_dim)` is decorated with `functools.lru_cache` so the
  sin/cos tables are "computed once". Its first call happens while `jax.jit` traces
  `train_step`, so jnp.arange/jnp.sin/jnp.cos are staged and the cache stores
  *tracers* of that trace, not arrays. Training keeps working: train_step is traced
  once and then only its compiled executable runs, so the logged steps look fine.
  At the first evaluation (step 120) a different jitted function, `eval_step`, is
  traced; the model calls `rope_tables` with the same (seq_len, head_dim), gets the
  stale tracers of the finished train_step trace from the cache, and
  `apply_rope` folds them into eval_step's program as captured constants. When
  eval_step is dispatched, JAX finds a tracer of a dead trace among its inputs and
  raises `jax.errors.UnexpectedTracerError` ("Encountered an unexpected tracer ...
  escaped the scope of the transformation ... created on line ... (rope_tables)")
  from the `eval_step(...)` call inside `evaluate`, not from the training loop, and
  the message points at the lru_cache'd helper. The process exits non-zero.
"""
import functools
import os
import tempfile
import time

import numpy as np
import jax
import jax.numpy as jnp

VOCAB = 32
SEQ_LEN = 48
D_MODEL = 96
N_HEADS = 4
HEAD_DIM = D_MODEL // N_HEADS
N_LAYERS = 2
BATCH = 32
STEPS = 400
EVAL_EVERY = 120
LR = 2e-3


# ---------------------------------------------------------------- data
def make_corpus(path, n_seqs=4096, seed=0):
    """Synthetic 'arithmetic progression' sequences: x_t = (a + b*t) mod VOCAB."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, VOCAB, size=(n_seqs, 1))
    b = rng.integers(1, 5, size=(n_seqs, 1))
    t = np.arange(SEQ_LEN + 1)[None, :]
    seqs = ((a + b * t) % VOCAB).astype(np.int32)
    noise = rng.random(seqs.shape) < 0.03
    seqs[noise] = rng.integers(0, VOCAB, size=noise.sum())
    np.save(path, seqs)


def batches(seqs, batch_size, seed):
    rng = np.random.default_rng(seed)
    while True:
        idx = rng.integers(0, len(seqs), size=batch_size)
        chunk = seqs[idx]
        yield chunk[:, :-1], chunk[:, 1:]


# ---------------------------------------------------------------- model
@functools.lru_cache(maxsize=None)
def rope_tables(seq_len, head_dim):
    """sin/cos tables for rotary position embeddings, computed once per shape."""
    inv_freq = 1.0 / (10000.0 ** (jnp.arange(0, head_dim, 2) / head_dim))
    angles = jnp.arange(seq_len)[:, None] * inv_freq[None, :]
    return jnp.sin(angles), jnp.cos(angles)  # HANG: tracer_cached_here


def apply_rope(x):
    # x: [batch, seq, heads, head_dim]
    sin, cos = rope_tables(x.shape[1], x.shape[-1])  # HANG: stale_tracer_fetched
    x1, x2 = x[..., 0::2], x[..., 1::2]
    sin, cos = sin[None, :, None, :], cos[None, :, None, :]
    rot = jnp.stack([x1 * cos - x2 * sin, x1 * sin + x2 * cos], axis=-1)
    return rot.reshape(x.shape)


def init_params(key):
    def dense(k, fan_in, fan_out):
        return jax.random.normal(k, (fan_in, fan_out)) * (1.0 / fan_in) ** 0.5

    keys = jax.random.split(key, 2 + 4 * N_LAYERS)
    params = {"embed": jax.random.normal(keys[0], (VOCAB, D_MODEL)) * 0.02, "layers": []}
    for i in range(N_LAYERS):
        k = keys[2 + 4 * i: 6 + 4 * i]
        params["layers"].append({
            "ln1": jnp.ones(D_MODEL), "ln2": jnp.ones(D_MODEL),
            "qkv": dense(k[0], D_MODEL, 3 * D_MODEL),
            "proj": dense(k[1], D_MODEL, D_MODEL),
            "mlp_in": dense(k[2], D_MODEL, 4 * D_MODEL),
            "mlp_out": dense(k[3], 4 * D_MODEL, D_MODEL),
        })
    params["ln_f"] = jnp.ones(D_MODEL)
    params["head"] = dense(keys[1], D_MODEL, VOCAB)
    return params


def rms_norm(x, g):
    return x * jax.lax.rsqrt(jnp.mean(x * x, axis=-1, keepdims=True) + 1e-6) * g


def attention(layer, x):
    b, s, _ = x.shape
    q, k, v = jnp.split(x @ layer["qkv"], 3, axis=-1)
    q = apply_rope(q.reshape(b, s, N_HEADS, HEAD_DIM))
    k = apply_rope(k.reshape(b, s, N_HEADS, HEAD_DIM))
    v = v.reshape(b, s, N_HEADS, HEAD_DIM)
    scores = jnp.einsum("bqhd,bkhd->bhqk", q, k) / HEAD_DIM ** 0.5
    mask = jnp.tril(jnp.ones((s, s), bool))
    scores = jnp.where(mask, scores, -1e9)
    out = jnp.einsum("bhqk,bkhd->bqhd", jax.nn.softmax(scores, axis=-1), v)
    return out.reshape(b, s, D_MODEL) @ layer["proj"]


def forward(params, tokens):
    x = params["embed"][tokens]
    for layer in params["layers"]:
        x = x + attention(layer, rms_norm(x, layer["ln1"]))
        h = rms_norm(x, layer["ln2"])
        x = x + jax.nn.gelu(h @ layer["mlp_in"]) @ layer["mlp_out"]
    return rms_norm(x, params["ln_f"]) @ params["head"]


def xent(params, inputs, targets):
    logits = forward(params, inputs)
    logp = jax.nn.log_softmax(logits)
    return -jnp.take_along_axis(logp, targets[..., None], axis=-1).mean()


# ---------------------------------------------------------------- optimisation
def adamw_init(params):
    zeros = jax.tree.map(jnp.zeros_like, params)
    return {"m": zeros, "v": zeros, "t": jnp.zeros((), jnp.int32)}


@jax.jit
def train_step(params, opt, inputs, targets):
    loss, grads = jax.value_and_grad(xent)(params, inputs, targets)
    t = opt["t"] + 1
    m = jax.tree.map(lambda a, g: 0.9 * a + 0.1 * g, opt["m"], grads)
    v = jax.tree.map(lambda a, g: 0.98 * a + 0.02 * g * g, opt["v"], grads)
    bc1, bc2 = 1 - 0.9 ** t, 1 - 0.98 ** t
    params = jax.tree.map(
        lambda p, mm, vv: p - LR * (mm / bc1 / (jnp.sqrt(vv / bc2) + 1e-8) + 0.01 * p),
        params, m, v)
    return params, {"m": m, "v": v, "t": t}, loss


@jax.jit
def eval_step(params, inputs, targets):
    logits = forward(params, inputs)
    acc = (jnp.argmax(logits, -1) == targets).mean()
    return xent(params, inputs, targets), acc


def evaluate(params, val_seqs):
    losses, accs = [], []
    for i in range(0, len(val_seqs), 256):
        chunk = val_seqs[i:i + 256]
        loss, acc = eval_step(params, chunk[:, :-1], chunk[:, 1:])  # HANG: raises_unexpected_tracer
        losses.append(float(loss))
        accs.append(float(acc))
    return float(np.mean(losses)), float(np.mean(accs))


def main():
    workdir = tempfile.mkdtemp(prefix="r19a_lm_")
    make_corpus(os.path.join(workdir, "train.npy"), seed=0)
    make_corpus(os.path.join(workdir, "val.npy"), n_seqs=512, seed=1)
    train = np.load(os.path.join(workdir, "train.npy"))
    val = np.load(os.path.join(workdir, "val.npy"))
    print(f"data: {train.shape[0]} train / {val.shape[0]} val sequences in {workdir}", flush=True)

    params = init_params(jax.random.key(0))
    opt = adamw_init(params)
    n_params = sum(x.size for x in jax.tree.leaves(params))
    print(f"model: {n_params / 1e3:.1f}k parameters", flush=True)

    stream = batches(train, BATCH, seed=123)
    t0 = time.time()
    for step in range(1, STEPS + 1):
        inputs, targets = next(stream)
        params, opt, loss = train_step(params, opt, inputs, targets)
        if step % 10 == 0:
            print(f"step {step} loss {float(loss):.4f} ({(time.time() - t0) / step * 1e3:.1f} ms/step)", flush=True)
        if step % EVAL_EVERY == 0:
            val_loss, val_acc = evaluate(params, val)  # HANG: eval_call_site
            print(f"step {step} val_loss {val_loss:.4f} val_acc {val_acc:.3f}", flush=True)
    print("done", flush=True)


if __name__ == "__main__":
    main()
