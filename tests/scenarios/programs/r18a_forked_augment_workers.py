"""Small CIFAR-style CNN trained with JAX; from epoch 2 on, batches are built and
augmented (random crop, flip, brightness jitter written with jax.random /
jax.numpy) by a multiprocessing pool of loader workers.

Source: https://github.com/jax-ml/jax/issues/9767
("TPU hang (when loading data from an external process)"): data-loading child
processes are forked after JAX has been initialised in the parent; the
workaround in the thread is to start the children before touching JAX, use the
'spawn' start method and keep JAX out of the children.

Mechanism: the parent has already initialised the XLA CPU client (model init,
warm-up epoch), which owns worker thread pools and internal locks.  The pool is
created with the default 'fork' start method on Linux, so each loader worker is
a copy of the parent with only the forking thread alive.  When a worker calls
the jitted augmentation, it waits on JAX/XLA runtime threads and locks that do
not exist in the child, so it never returns a batch, and the training loop
waits forever in the pool's result queue.  JAX only prints a RuntimeWarning
that os.fork() was called.
"""
import ctypes
import multiprocessing as mp
import signal
import time

import numpy as np
import jax
import jax.numpy as jnp

NUM_TRAIN = 6144
IMG = 32
CLASSES = 10
BATCH = 128
EPOCHS = 6
WARMUP_EPOCHS = 1
NUM_WORKERS = 2
LOG_EVERY = 12

# ---------------------------------------------------------------------------
# data
# ---------------------------------------------------------------------------
def make_dataset(n, seed=0):
    rng = np.random.default_rng(seed)
    protos = rng.integers(0, 255, size=(CLASSES, IMG, IMG, 3)).astype(np.float32)
    labels = rng.integers(0, CLASSES, size=n).astype(np.int32)
    noise = rng.normal(0, 40, size=(n, IMG, IMG, 3)).astype(np.float32)
    images = np.clip(protos[labels] * 0.6 + noise + 50, 0, 255).astype(np.uint8)
    return images, labels


TRAIN_IMAGES, TRAIN_LABELS = make_dataset(NUM_TRAIN)
MEAN = np.array([125.3, 123.0, 113.9], np.float32)
STD = np.array([63.0, 62.1, 66.7], np.float32)


@jax.jit
def augment(key, images):
    """Pad-and-crop, horizontal flip and brightness jitter for a uint8 batch."""
    n = images.shape[0]
    k_crop, k_flip, k_bright = jax.random.split(key, 3)
    x = images.astype(jnp.float32)
    x = jnp.pad(x, ((0, 0), (4, 4), (4, 4), (0, 0)), mode="reflect")
    offs = jax.random.randint(k_crop, (n, 2), 0, 9)

    def crop(img, off):
        return jax.lax.dynamic_slice(img, (off[0], off[1], 0), (IMG, IMG, 3))

    x = jax.vmap(crop)(x, offs)
    flip = jax.random.bernoulli(k_flip, 0.5, (n, 1, 1, 1))
    x = jnp.where(flip, x[:, :, ::-1, :], x)
    x = x * jax.random.uniform(k_bright, (n, 1, 1, 1), minval=0.8, maxval=1.2)
    return (jnp.clip(x, 0, 255) - MEAN) / STD


def normalize(images):
    return (images.astype(np.float32) - MEAN) / STD


def _loader_worker_init():
    libc = ctypes.CDLL("libc.so.6")
    libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG: go away with the trainer


def _load_batch(args):
    batch_idx, seed = args
    images = TRAIN_IMAGES[batch_idx]
    labels = TRAIN_LABELS[batch_idx]
    x = augment(jax.random.PRNGKey(seed), images)  # HANG: worker_jit_after_fork
    return np.asarray(x), labels


class Loader:
    """Shuffling batch loader; augmentation runs in worker processes."""

    def __init__(self, batch_size, num_workers, seed=0):
        self.batch_size = batch_size
        self.num_workers = num_workers
        self.rng = np.random.default_rng(seed)
        self.epoch = 0

    def __len__(self):
        return NUM_TRAIN // self.batch_size

    def __iter__(self):
        order = self.rng.permutation(NUM_TRAIN)
        batches = [order[i * self.batch_size:(i + 1) * self.batch_size] for i in range(len(self))]
        self.epoch += 1
        if self.epoch <= WARMUP_EPOCHS:
            # plain batches during warm-up, no augmentation
            for b in batches:
                yield normalize(TRAIN_IMAGES[b]), TRAIN_LABELS[b]
            return
        seeds = self.rng.integers(0, 2**31 - 1, size=len(batches))
        with mp.Pool(self.num_workers, initializer=_loader_worker_init) as pool:  # HANG: pool_forked_after_jax
            for x, y in pool.imap(_load_batch, zip(batches, seeds.tolist()), chunksize=1):  # HANG: loop_waits_for_batch
                yield x, y


# ---------------------------------------------------------------------------
# model
# ---------------------------------------------------------------------------
def conv(x, w, b, stride=1):
    y = jax.lax.conv_general_dilated(x, w, (stride, stride), "SAME",
                                     dimension_numbers=("NHWC", "HWIO", "NHWC"))
    return y + b


def init_params(key):
    ks = jax.random.split(key, 4)

    def he(k, shape):
        fan_in = np.prod(shape[:-1])
        return jax.random.normal(k, shape) * np.sqrt(2.0 / fan_in)

    return {
        "c1": {"w": he(ks[0], (3, 3, 3, 32)), "b": jnp.zeros(32)},
        "c2": {"w": he(ks[1], (3, 3, 32, 64)), "b": jnp.zeros(64)},
        "c3": {"w": he(ks[2], (3, 3, 64, 64)), "b": jnp.zeros(64)},
        "fc": {"w": he(ks[3], (64, CLASSES)), "b": jnp.zeros(CLASSES)},
    }


def forward(params, x):
    x = jax.nn.relu(conv(x, params["c1"]["w"], params["c1"]["b"], 2))
    x = jax.nn.relu(conv(x, params["c2"]["w"], params["c2"]["b"], 2))
    x = jax.nn.relu(conv(x, params["c3"]["w"], params["c3"]["b"], 2))
    x = x.mean(axis=(1, 2))
    return x @ params["fc"]["w"] + params["fc"]["b"]


def loss_fn(params, x, y):
    logits = forward(params, x)
    nll = -jnp.take_along_axis(jax.nn.log_softmax(logits), y[:, None], 1).mean()
    return nll, (logits.argmax(-1) == y).mean()


def sgd_momentum_init(params):
    return jax.tree.map(jnp.zeros_like, params)


@jax.jit
def train_step(params, velocity, x, y, lr):
    (loss, acc), grads = jax.value_and_grad(loss_fn, has_aux=True)(params, x, y)
    velocity = jax.tree.map(lambda v, g: 0.9 * v + g, velocity, grads)
    params = jax.tree.map(lambda p, v, w: p - lr * (v + 5e-4 * w), params, velocity, params)
    return params, velocity, loss, acc


def main():
    print(f"jax {jax.__version__} devices={jax.devices()}", flush=True)
    params = init_params(jax.random.PRNGKey(42))
    velocity = sgd_momentum_init(params)
    loader = Loader(BATCH, NUM_WORKERS)
    steps_per_epoch = len(loader)
    print(f"train images={NUM_TRAIN} batch={BATCH} steps/epoch={steps_per_epoch} "
          f"loader workers={NUM_WORKERS}", flush=True)
    step = 0
    t0 = time.time()
    for epoch in range(1, EPOCHS + 1):
        lr = 0.05 if epoch > WARMUP_EPOCHS else 0.01
        tag = "augment" if epoch > WARMUP_EPOCHS else "warmup"
        print(f"epoch {epoch}/{EPOCHS} ({tag}) lr={lr}", flush=True)
        losses, accs = [], []
        for x, y in loader:
            params, velocity, loss, acc = train_step(params, velocity, jnp.asarray(x), jnp.asarray(y), lr)
            step += 1
            losses.append(loss)
            accs.append(acc)
            if step % LOG_EVERY == 0:
                print(f"  step {step} loss {float(loss):.4f} acc {float(acc):.3f} "
                      f"[{time.time() - t0:.1f}s]", flush=True)
        print(f"epoch {epoch} done: loss {float(jnp.mean(jnp.stack(losses))):.4f} "
              f"acc {float(jnp.mean(jnp.stack(accs))):.3f} [{time.time() - t0:.1f}s]", flush=True)
    print("training finished", flush=True)


if __name__ == "__main__":
    main()
