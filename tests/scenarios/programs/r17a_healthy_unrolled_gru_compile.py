"""Character-level GRU language model trained with JAX on CPU.

Based on the slow-compile reports in https://github.com/jax-ml/jax/issues/1223
("Slow CPU compile of unrolled autoregressive sampling loop"): a Python `for`
loop over time steps inside a jitted function is unrolled by tracing, so XLA
receives one huge straight-line program (80 GRU cells forward plus their
backward pass) and spends tens of seconds compiling it on the CPU backend.

The job is healthy: after "compiling train step" it prints nothing for about a
minute while the CPU is busy in XLA compilation, then trains quickly and exits
0.  Progress is only printed once per epoch.
"""
import time

import jax
import jax.numpy as jnp
import numpy as np

SEQ_LEN = 80
BATCH = 16
EMBED = 32
HIDDEN = 64
EPOCHS = 4
STEPS_PER_EPOCH = 100

CORPUS = (
    "the quick brown fox jumps over the lazy dog while the cat sleeps on the "
    "warm mat and the bird sings a song about rivers mountains and the sea "
) * 200


class CharDataset:
    def __init__(self, text, seq_len, batch_size, seed=0):
        self.vocab = sorted(set(text))
        self.stoi = {c: i for i, c in enumerate(self.vocab)}
        self.data = np.array([self.stoi[c] for c in text], dtype=np.int32)
        self.seq_len = seq_len
        self.batch_size = batch_size
        self.rng = np.random.default_rng(seed)

    @property
    def vocab_size(self):
        return len(self.vocab)

    def batches(self, num_steps):
        for _ in range(num_steps):
            starts = self.rng.integers(0, len(self.data) - self.seq_len - 1, self.batch_size)
            chunk = np.stack([self.data[s:s + self.seq_len + 1] for s in starts])
            yield chunk[:, :-1], chunk[:, 1:]


def init_params(key, vocab_size):
    keys = jax.random.split(key, 8)
    scale_x = 1.0 / np.sqrt(EMBED)
    scale_h = 1.0 / np.sqrt(HIDDEN)
    return {
        "embed": jax.random.normal(keys[0], (vocab_size, EMBED)) * 0.1,
        "wz": jax.random.normal(keys[1], (EMBED, HIDDEN)) * scale_x,
        "uz": jax.random.normal(keys[2], (HIDDEN, HIDDEN)) * scale_h,
        "wr": jax.random.normal(keys[3], (EMBED, HIDDEN)) * scale_x,
        "ur": jax.random.normal(keys[4], (HIDDEN, HIDDEN)) * scale_h,
        "wn": jax.random.normal(keys[5], (EMBED, HIDDEN)) * scale_x,
        "un": jax.random.normal(keys[6], (HIDDEN, HIDDEN)) * scale_h,
        "out": jax.random.normal(keys[7], (HIDDEN, vocab_size)) * scale_h,
        "b": jnp.zeros((3, HIDDEN)),
    }


def gru_cell(p, h, x):
    z = jax.nn.sigmoid(x @ p["wz"] + h @ p["uz"] + p["b"][0])
    r = jax.nn.sigmoid(x @ p["wr"] + h @ p["ur"] + p["b"][1])
    n = jnp.tanh(x @ p["wn"] + (r * h) @ p["un"] + p["b"][2])
    return (1.0 - z) * n + z * h


def loss_fn(params, inputs, targets):
    emb = params["embed"][inputs]
    h = jnp.zeros((inputs.shape[0], HIDDEN))
    total = 0.0
    for t in range(SEQ_LEN):
        h = gru_cell(params, h, emb[:, t])
        logits = h @ params["out"]
        logp = jax.nn.log_softmax(logits)
        total = total - jnp.mean(jnp.take_along_axis(logp, targets[:, t:t + 1], axis=1))
    return total / SEQ_LEN


def adam(lr, b1=0.9, b2=0.999, eps=1e-8):
    def init(params):
        zeros = jax.tree.map(jnp.zeros_like, params)
        return (zeros, zeros, jnp.zeros((), jnp.int32))

    def update(grads, state, params=None):
        mu, nu, count = state
        count = count + 1
        mu = jax.tree.map(lambda m, g: b1 * m + (1 - b1) * g, mu, grads)
        nu = jax.tree.map(lambda v, g: b2 * v + (1 - b2) * g * g, nu, grads)
        c1, c2 = 1 - b1 ** count, 1 - b2 ** count
        updates = jax.tree.map(lambda m, v: -lr * (m / c1) / (jnp.sqrt(v / c2) + eps), mu, nu)
        return updates, (mu, nu, count)

    return init, update


def clip_by_global_norm(grads, max_norm):
    norm = jnp.sqrt(sum(jnp.sum(g * g) for g in jax.tree.leaves(grads)))
    scale = jnp.minimum(1.0, max_norm / (norm + 1e-6))
    return jax.tree.map(lambda g: g * scale, grads), norm


def main():
    ds = CharDataset(CORPUS, SEQ_LEN, BATCH)
    print(f"vocab size {ds.vocab_size}, corpus {len(ds.data)} chars", flush=True)
    params = init_params(jax.random.PRNGKey(42), ds.vocab_size)
    opt_init, opt_update = adam(3e-3)
    opt_state = opt_init(params)

    @jax.jit
    def train_step(params, opt_state, inputs, targets):
        loss, grads = jax.value_and_grad(loss_fn)(params, inputs, targets)
        grads, gnorm = clip_by_global_norm(grads, 1.0)
        updates, opt_state = opt_update(grads, opt_state)
        params = jax.tree.map(lambda p, u: p + u, params, updates)
        return params, opt_state, loss, gnorm

    print("compiling train step ...", flush=True)
    t0 = time.time()
    for epoch in range(EPOCHS):
        losses = []
        for inputs, targets in ds.batches(STEPS_PER_EPOCH):
            params, opt_state, loss, gnorm = train_step(params, opt_state, inputs, targets)
            losses.append(loss)
        mean_loss = float(jnp.mean(jnp.stack(losses)))
        print(f"epoch {epoch + 1}/{EPOCHS} loss {mean_loss:.4f} "
              f"grad_norm {float(gnorm):.3f} elapsed {time.time() - t0:.1f}s", flush=True)
    print("done", flush=True)


if __name__ == "__main__":
    main()
