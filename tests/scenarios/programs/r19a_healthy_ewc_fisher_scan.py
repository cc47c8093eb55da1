"""Healthy control: continual-learning (EWC) training in plain JAX with a long, silent,
fully compiled Fisher-information pass between the two tasks.

Source: https://github.com/jeremiecoullon/jax-tqdm/pull/27
  (a user fitting a large model with a compiled `lax.scan` loop: "I am forced to wait
  potentially minutes after executing my code until the progress bar finally shows up
  when the first iteration completes" -- a compiled scan/while loop prints nothing
  while it runs.)

What happens:
  Task A (a synthetic 10-class problem) trains for 400 logged steps. Then, for Elastic
  Weight Consolidation, the diagonal Fisher information is estimated from per-example
  gradients over as many task-A samples as fit a 40 s budget (sized from a short
  probe). The whole estimate is ONE jitted call: a
  `lax.scan` over chunks, each chunk a `vmap` of per-example `grad`s whose squares are
  accumulated in the carry. Python sits in a single XLA execution for about 40 s,
  with no output and one busy thread pool -- to a naive watchdog it looks exactly like
  a hang. It is not: the call returns, the script prints the Fisher statistics, trains
  task B for 400 logged steps with the EWC penalty, evaluates both tasks and exits 0.
"""
import os
import tempfile
import time

import numpy as np
import jax
import jax.numpy as jnp

IN_DIM, HIDDEN, N_CLASSES = 64, 256, 10
BATCH = 1024
STEPS_PER_TASK = 400
FISHER_BUDGET_S = 40.0  # per-example gradients for the Fisher estimate: as many as fit this budget
FISHER_PROBE = 2048
FISHER_CHUNK = 8
EWC_LAMBDA = 10.0
LR = 1e-3


def make_task(seed, n=12000):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, IN_DIM)).astype(np.float32)
    w = rng.normal(size=(IN_DIM, N_CLASSES)).astype(np.float32)
    y = np.argmax(np.tanh(x @ w) + 0.2 * rng.normal(size=(n, N_CLASSES)), axis=1).astype(np.int32)
    return x, y


def init_params(key):
    ks = jax.random.split(key, 4)
    dims = [IN_DIM, HIDDEN, HIDDEN, HIDDEN, N_CLASSES]
    return [{"w": jax.random.normal(k, (a, b)) * (2.0 / a) ** 0.5, "b": jnp.zeros(b)}
            for k, a, b in zip(ks, dims[:-1], dims[1:])]


def forward(params, x):
    for layer in params[:-1]:
        x = jax.nn.relu(x @ layer["w"] + layer["b"])
    return x @ params[-1]["w"] + params[-1]["b"]


def nll(params, x, y):
    logp = jax.nn.log_softmax(forward(params, x))
    return -jnp.take_along_axis(logp, y[..., None], axis=-1).mean()


def ewc_penalty(params, anchor, fisher):
    sq = jax.tree.map(lambda p, a, f: (f * (p - a) ** 2).sum(), params, anchor, fisher)
    return 0.5 * EWC_LAMBDA * sum(jax.tree.leaves(sq))


@jax.jit
def train_step(params, opt, x, y, anchor, fisher):
    def loss_fn(p):
        task = nll(p, x, y)
        return task + ewc_penalty(p, anchor, fisher), task

    (loss, task), g = jax.value_and_grad(loss_fn, has_aux=True)(params)
    t = opt["t"] + 1
    m = jax.tree.map(lambda a, b: 0.9 * a + 0.1 * b, opt["m"], g)
    v = jax.tree.map(lambda a, b: 0.999 * a + 0.001 * b * b, opt["v"], g)
    params = jax.tree.map(
        lambda p, mm, vv: p - LR * (mm / (1 - 0.9 ** t)) / (jnp.sqrt(vv / (1 - 0.999 ** t)) + 1e-8),
        params, m, v)
    return params, {"m": m, "v": v, "t": t}, loss, task


@jax.jit
def accuracy(params, x, y):
    return (jnp.argmax(forward(params, x), -1) == y).mean()


@jax.jit
def diag_fisher(params, xs, key):
    """E[(d log p(y|x) / d theta)^2] with y sampled from the model, one example at a time."""
    per_example = jax.vmap(jax.grad(lambda p, x, y: -nll(p, x[None], y[None])), in_axes=(None, 0, 0))

    def body(acc, inp):
        x, k = inp
        y = jax.random.categorical(k, forward(params, x))
        g = per_example(params, x, y)
        return jax.tree.map(lambda a, gi: a + (gi ** 2).sum(0), acc, g), None

    chunks = xs.reshape(-1, FISHER_CHUNK, IN_DIM)
    keys = jax.random.split(key, chunks.shape[0])
    zeros = jax.tree.map(jnp.zeros_like, params)
    total, _ = jax.lax.scan(body, zeros, (chunks, keys))
    return jax.tree.map(lambda a: a / xs.shape[0], total)


def train_task(name, params, opt, x, y, anchor, fisher, seed):
    rng = np.random.default_rng(seed)
    t0 = time.time()
    for step in range(1, STEPS_PER_TASK + 1):
        idx = rng.integers(0, len(x), size=BATCH)
        params, opt, loss, task = train_step(params, opt, x[idx], y[idx], anchor, fisher)
        if step % 20 == 0:
            print(f"[{name}] step {step} loss {float(loss):.4f} task_loss {float(task):.4f} "
                  f"({(time.time() - t0) / step:.3f} s/step)", flush=True)
    return params, opt


def main():
    workdir = tempfile.mkdtemp(prefix="r19a_ewc_")
    xa, ya = make_task(1)
    xb, yb = make_task(2)
    np.savez(os.path.join(workdir, "tasks.npz"), xa=xa, ya=ya, xb=xb, yb=yb)
    print(f"tasks written to {workdir}", flush=True)

    params = init_params(jax.random.key(0))
    zeros = jax.tree.map(jnp.zeros_like, params)
    opt = {"m": zeros, "v": zeros, "t": jnp.zeros((), jnp.int32)}

    params, opt = train_task("task A", params, opt, xa, ya, params, zeros, seed=10)
    print(f"task A acc {float(accuracy(params, xa, ya)):.3f}", flush=True)

    # size the Fisher sample to the time budget from a short probe (first call compiles)
    probe = xa[:FISHER_PROBE]
    jax.block_until_ready(diag_fisher(params, probe, jax.random.key(1)))
    t0 = time.time()
    jax.block_until_ready(diag_fisher(params, probe, jax.random.key(2)))
    rate = FISHER_PROBE / (time.time() - t0)
    n_fisher = int(np.clip(rate * FISHER_BUDGET_S, 8000, 80000)) // FISHER_CHUNK * FISHER_CHUNK
    print(f"estimating diagonal Fisher on {n_fisher} task-A examples ({rate:.0f} ex/s) ...", flush=True)
    t0 = time.time()
    fx = np.resize(xa, (n_fisher, IN_DIM))
    fisher = jax.block_until_ready(diag_fisher(params, fx, jax.random.key(7)))  # HANG: long_silent_fisher_scan
    flat = np.concatenate([np.ravel(f) for f in jax.tree.leaves(fisher)])
    print(f"Fisher done in {time.time() - t0:.1f}s: mean {flat.mean():.3e} max {flat.max():.3e}", flush=True)

    anchor = jax.tree.map(lambda p: p.copy(), params)
    params, opt = train_task("task B", params, opt, xb, yb, anchor, fisher, seed=20)
    print(f"final acc: task A {float(accuracy(params, xa, ya)):.3f} "
          f"task B {float(accuracy(params, xb, yb)):.3f}", flush=True)
    print("done", flush=True)


if __name__ == "__main__":
    main()
