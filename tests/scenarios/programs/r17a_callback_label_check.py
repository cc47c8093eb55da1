"""Intent classifier (bag of embeddings + MLP) trained with JAX, with input
checks done from inside the jitted train step via a host callback.

Modelled on https://github.com/gbionics/jaxsim/pull/181 ("Raise exceptions from
jit-compiled functions"), where a ValueError raised by a Python function called
through jax.debug.callback from jitted code reaches the user only as
"INTERNAL: CpuCallback error: ValueError: ..." wrapped in an XLA runtime error.

Here the second data shard contains utterances labelled with an intent that
the label map built from the first shard does not know; the loader maps the
unknown intent to index len(label_map) instead of failing.  The check lives in
`_validate_labels`, which runs on the host as a callback during execution of
`train_step`; its ValueError is re-raised as jax.errors.JaxRuntimeError at the
`train_step(...)` call in the epoch loop, so the traceback's last user frame
is the training loop rather than the data loader that produced the bad label.
The job exits non-zero partway through epoch 0, when the loader reaches the
second shard (after 64 good steps).
"""
import time

import jax
import jax.numpy as jnp
import numpy as np

VOCAB = 2000
EMBED = 64
HIDDEN = 128
SEQ = 24
BATCH = 64
EPOCHS = 3

INTENTS_SHARD_A = ["book_flight", "cancel_order", "check_balance", "play_music", "weather"]
INTENTS_SHARD_B = INTENTS_SHARD_A + ["set_alarm"]


def make_shard(intents, n, seed):
    rng = np.random.default_rng(seed)
    names = rng.choice(intents, size=n)
    tokens = np.zeros((n, SEQ), np.int32)
    for i, name in enumerate(names):
        base = (abs(hash(name)) % 50) * 37
        length = rng.integers(6, SEQ)
        tokens[i, :length] = (base + rng.integers(0, 40, size=length)) % (VOCAB - 1) + 1
    return tokens, names


class IntentLoader:
    def __init__(self, shards, label_map, batch_size, seed=0):
        self.shards = shards
        self.label_map = label_map
        self.batch_size = batch_size
        self.rng = np.random.default_rng(seed)

    def encode_labels(self, names):
        unk = len(self.label_map)
        return np.array([self.label_map.get(n, unk) for n in names], np.int32)  # HANG: unknown_label_index

    def __iter__(self):
        for tokens, names in self.shards:
            labels = self.encode_labels(names)
            order = self.rng.permutation(len(tokens))
            for s in range(0, len(order) - self.batch_size + 1, self.batch_size):
                idx = order[s:s + self.batch_size]
                yield tokens[idx], labels[idx]


def _validate_labels(labels, num_classes):
    labels = np.asarray(labels)
    bad = np.flatnonzero((labels < 0) | (labels >= num_classes))
    if bad.size:
        raise ValueError(  # HANG: label_check_raises
            f"{bad.size} labels outside [0, {num_classes}) in batch, e.g. {labels[bad[:5]].tolist()}")


def init_params(key, num_classes):
    k1, k2, k3 = jax.random.split(key, 3)
    return {
        "embed": jax.random.normal(k1, (VOCAB, EMBED)) * 0.05,
        "w1": jax.random.normal(k2, (EMBED, HIDDEN)) * (1 / np.sqrt(EMBED)),
        "b1": jnp.zeros((HIDDEN,)),
        "w2": jax.random.normal(k3, (HIDDEN, num_classes)) * (1 / np.sqrt(HIDDEN)),
        "b2": jnp.zeros((num_classes,)),
    }


def forward(params, tokens):
    mask = (tokens > 0).astype(jnp.float32)[..., None]
    emb = params["embed"][tokens] * mask
    pooled = emb.sum(1) / jnp.maximum(mask.sum(1), 1.0)
    h = jax.nn.relu(pooled @ params["w1"] + params["b1"])
    return h @ params["w2"] + params["b2"]


def sgd_momentum(lr, momentum=0.9):
    def init(params):
        return jax.tree.map(jnp.zeros_like, params)

    def update(grads, state):
        state = jax.tree.map(lambda v, g: momentum * v + g, state, grads)
        return jax.tree.map(lambda v: -lr * v, state), state

    return init, update


def main():
    shard_a = make_shard(INTENTS_SHARD_A, 4096, seed=0)
    shard_b = make_shard(INTENTS_SHARD_B, 4096, seed=1)
    label_map = {name: i for i, name in enumerate(sorted(set(shard_a[1])))}
    num_classes = len(label_map)
    print(f"{num_classes} intents: {[str(n) for n in sorted(label_map)]}", flush=True)

    params = init_params(jax.random.PRNGKey(0), num_classes)
    opt_init, opt_update = sgd_momentum(0.05)
    opt_state = opt_init(params)

    def loss_fn(params, tokens, labels):
        logits = forward(params, tokens)
        onehot = jax.nn.one_hot(labels, num_classes)
        loss = -jnp.mean(jnp.sum(onehot * jax.nn.log_softmax(logits), -1))
        acc = jnp.mean(jnp.argmax(logits, -1) == labels)
        return loss, acc

    @jax.jit
    def train_step(params, opt_state, tokens, labels):
        jax.debug.callback(_validate_labels, labels, num_classes)
        (loss, acc), grads = jax.value_and_grad(loss_fn, has_aux=True)(params, tokens, labels)
        updates, opt_state = opt_update(grads, opt_state)
        params = jax.tree.map(lambda p, u: p + u, params, updates)
        return params, opt_state, loss, acc

    train_shards = [shard_a, shard_b]
    t0 = time.time()
    step = 0
    for epoch in range(EPOCHS):
        loader = IntentLoader(train_shards, label_map, BATCH, seed=epoch)
        for tokens, labels in loader:
            params, opt_state, loss, acc = train_step(params, opt_state, tokens, labels)
            step += 1
            if step % 20 == 0:
                print(f"epoch {epoch} step {step} loss {float(loss):.4f} acc {float(acc):.3f} "
                      f"({time.time() - t0:.1f}s)", flush=True)
            time.sleep(0.02)
        print(f"epoch {epoch} finished", flush=True)


if __name__ == "__main__":
    main()
