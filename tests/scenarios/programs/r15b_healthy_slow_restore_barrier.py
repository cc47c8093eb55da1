"""Source: https://github.com/marin-community/marin/pull/8538 (one rank's slow restore holds the post-restore barrier)
A two-process JAX data-parallel job resumes from a checkpoint before training. Each process
restores its own shard (decompress, verify the checksum, re-pack); process 1's shard is ten times
larger, so for a while it works silently while process 0 waits in sync_global_devices after the
restore. Then both train 30 steps with a cross-process gradient all-gather and exit cleanly."""

import ctypes
import hashlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
import zlib

import numpy as np


def _die_with_parent():
    ctypes.CDLL("libc.so.6").prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def write_checkpoint(ckpt_dir: str) -> None:
    rng = np.random.default_rng(0)
    chunk = zlib.compress(rng.integers(0, 16, size=4_000_000, dtype=np.uint8).tobytes(), 9)
    for pid, n_chunks in ((0, 4), (1, 40)):
        with open(os.path.join(ckpt_dir, f"shard-{pid}.bin"), "wb") as f:
            for _ in range(n_chunks):
                f.write(len(chunk).to_bytes(8, "little") + chunk)


def restore_shard(path: str) -> np.ndarray:
    digest = hashlib.sha256()
    total = 0
    with open(path, "rb") as f:
        while header := f.read(8):
            raw = zlib.decompress(f.read(int.from_bytes(header, "little")))
            digest.update(raw)
            zlib.compress(raw, 6)  # re-pack into the local cache format
            total += len(raw)
    seed = int(digest.hexdigest()[:8], 16)
    return np.random.default_rng(seed).normal(size=(8,)).astype(np.float32) * 0.01 + total * 0.0


def worker(process_id: int, port: int, ckpt_dir: str) -> None:
    import jax
    import jax.numpy as jnp
    from jax.experimental import multihost_utils

    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(f"127.0.0.1:{port}", num_processes=2, process_id=process_id)
    print(f"process {process_id}: restoring checkpoint shard", flush=True)
    w_local = restore_shard(os.path.join(ckpt_dir, f"shard-{process_id}.bin"))
    multihost_utils.sync_global_devices("restore_done")
    print(f"process {process_id}: restore done", flush=True)
    w = jnp.asarray(multihost_utils.process_allgather(jnp.asarray(w_local)).mean(axis=0))

    rng = np.random.default_rng(process_id)
    grad_fn = jax.jit(jax.value_and_grad(lambda w, x, y: jnp.mean((x @ w - y) ** 2)))
    for step in range(30):
        x = rng.normal(size=(64, 8)).astype(np.float32)
        loss, g = grad_fn(w, x, x[:, 1] - x[:, 2])
        w = w - 0.1 * multihost_utils.process_allgather(g).mean(axis=0)
        print(f"process {process_id} step {step} loss {float(loss):.4f}", flush=True)
    jax.distributed.shutdown()


def main() -> None:
    ckpt_dir = tempfile.mkdtemp(prefix="ckpt-")
    write_checkpoint(ckpt_dir)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    procs = [
        subprocess.Popen([sys.executable, __file__, str(i), str(port), ckpt_dir], preexec_fn=_die_with_parent)
        for i in range(2)
    ]
    codes = [p.wait() for p in procs]
    for name in os.listdir(ckpt_dir):
        os.remove(os.path.join(ckpt_dir, name))
    os.rmdir(ckpt_dir)
    sys.exit(max(codes))


if __name__ == "__main__":
    if len(sys.argv) > 1:
        worker(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3])
    else:
        main()
