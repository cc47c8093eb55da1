"""Healthy JAX keypoint-heatmap training with a long, silent in-memory caching phase before step 0.

Source: https://github.com/talmolab/sleap/issues/2560
  A user reports training that seems stuck ("not sure if bug"); the maintainer answers: "This could
  be the memory caching step ... The caching happens before training begins and can take a moment
  depending on dataset size."

What happens:
  Before training, the script decodes every labelled frame once and caches the model inputs in RAM:
  it denoises the frame (FFT low-pass), normalises it, and renders one Gaussian confidence map per
  keypoint at output stride 2.  This loop prints nothing (as such caching loops usually do), and
  takes roughly 27-55 s on this machine (load-dependent), during which the process is busy on one
  core but emits no output at all.  Afterwards the jitted training loop runs normally, logging
  step 1 and then every 10 steps (~1-2 s apart), and the program exits 0.
  Nothing is wrong: it is only a long silent phase.
"""
import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")
import functools
import tempfile
import time

import jax
import jax.numpy as jnp
import numpy as np

N_FRAMES = 1350
IMG = 96
STRIDE = 2
N_KPTS = 6
SIGMA = 2.5
BATCH = 16
STEPS = 150
OUT_DIR = tempfile.mkdtemp(prefix="r19c_cache_")


def synth_frame(rng):
    """A fake video frame: a blob 'animal' whose keypoints we know."""
    cy, cx = rng.uniform(24, IMG - 24, size=2)
    ang = rng.uniform(0, 2 * np.pi)
    offs = np.stack([np.cos(ang + np.arange(N_KPTS) * 2 * np.pi / N_KPTS),
                     np.sin(ang + np.arange(N_KPTS) * 2 * np.pi / N_KPTS)], 1) * rng.uniform(8, 16)
    kpts = np.array([cy, cx]) + offs
    yy, xx = np.mgrid[:IMG, :IMG]
    img = np.exp(-((yy - cy) ** 2 + (xx - cx) ** 2) / 200.0)
    for ky, kx in kpts:
        img += 0.6 * np.exp(-((yy - ky) ** 2 + (xx - kx) ** 2) / 8.0)
    img += rng.normal(scale=0.3, size=img.shape)
    return img.astype(np.float32), kpts.astype(np.float32)


def preprocess(img, kpts):
    """Denoise + normalise a frame and render its confidence maps (the slow part of caching)."""
    f = np.fft.fft2(img)
    fy = np.fft.fftfreq(IMG)[:, None]
    fx = np.fft.fftfreq(IMG)[None, :]
    img = np.real(np.fft.ifft2(f * np.exp(-(fy ** 2 + fx ** 2) * 60.0)))
    img = (img - img.mean()) / (img.std() + 1e-6)
    h = IMG // STRIDE
    yy, xx = np.mgrid[:h, :h] * STRIDE
    maps = np.empty((N_KPTS, h, h), np.float32)
    for k, (ky, kx) in enumerate(kpts):
        # supersampled rendering, the way some labelling tools do it
        acc = np.zeros((h, h))
        for dy in np.linspace(-0.5, 0.5, 7):
            for dx in np.linspace(-0.5, 0.5, 7):
                acc += np.exp(-((yy + dy - ky) ** 2 + (xx + dx - kx) ** 2) / (2 * SIGMA ** 2))
        maps[k] = acc / 49.0
    return img.astype(np.float32), maps


def build_memory_cache(seed=0):
    rng = np.random.default_rng(seed)
    xs = np.empty((N_FRAMES, IMG, IMG, 1), np.float32)
    ys = np.empty((N_FRAMES, IMG // STRIDE, IMG // STRIDE, N_KPTS), np.float32)
    for i in range(N_FRAMES):
        img, kpts = synth_frame(rng)
        x, maps = preprocess(img, kpts)
        xs[i, ..., 0] = x
        ys[i] = np.moveaxis(maps, 0, -1)
    return xs, ys


def init_params(key):
    def conv(k, cin, cout):
        return {"w": jax.random.normal(k, (3, 3, cin, cout)) * np.sqrt(2.0 / (9 * cin)),
                "b": jnp.zeros(cout)}
    ks = jax.random.split(key, 4)
    return [conv(ks[0], 1, 16), conv(ks[1], 16, 32), conv(ks[2], 32, 32), conv(ks[3], 32, N_KPTS)]


def apply(params, x):
    dn = ("NHWC", "HWIO", "NHWC")
    for i, p in enumerate(params):
        stride = (STRIDE, STRIDE) if i == 0 else (1, 1)
        x = jax.lax.conv_general_dilated(x, p["w"], stride, "SAME", dimension_numbers=dn) + p["b"]
        if i < len(params) - 1:
            x = jax.nn.relu(x)
    return x


@functools.partial(jax.jit, donate_argnums=(0,))
def train_step(params, x, y, lr=3e-3):
    loss, g = jax.value_and_grad(lambda p: jnp.mean((apply(p, x) - y) ** 2))(params)
    return jax.tree.map(lambda p, g: p - lr * g, params, g), loss


def main():
    t0 = time.time()
    print(f"caching {N_FRAMES} labelled frames in memory ...", flush=True)
    xs, ys = build_memory_cache()   # HANG: silent_memory_cache
    print(f"cache ready: {xs.nbytes / 2**20:.0f} MiB images, {ys.nbytes / 2**20:.0f} MiB "
          f"confidence maps ({time.time() - t0:.1f}s)", flush=True)

    params = init_params(jax.random.PRNGKey(0))
    rng = np.random.default_rng(1)
    for step in range(1, STEPS + 1):
        idx = rng.integers(0, N_FRAMES, size=BATCH)
        params, loss = train_step(params, xs[idx], ys[idx])
        if step == 1 or step % 10 == 0:
            print(f"step {step} loss {float(loss):.5f} ({time.time() - t0:.1f}s)", flush=True)
    np.savez(os.path.join(OUT_DIR, "final_params.npz"),
             *[np.asarray(l) for l in jax.tree_util.tree_leaves(params)])
    print(f"training finished ({time.time() - t0:.1f}s)", flush=True)


if __name__ == "__main__":
    main()
