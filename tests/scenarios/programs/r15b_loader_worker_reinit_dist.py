"""Source: https://github.com/google/grain/issues/802 (Grain DataLoader fails in multi-host environment)
A two-process JAX data-parallel job calls jax.distributed.initialize at import time, as the
training script's first lines. At its second epoch process 1 (which holds the large shard) starts
decode worker processes with the spawn start method; each worker re-imports the script and so runs
initialize again as process 1, and the coordination service then aborts every process of the job."""

import ctypes
import multiprocessing as mp
import os
import signal
import socket
import subprocess
import sys
import zlib

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils


def _die_with_parent():
    ctypes.CDLL("libc.so.6").prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    if str(os.getppid()) != os.environ.get("PARENT_PID", str(os.getppid())):
        os._exit(1)  # the parent died before we could ask to die with it
    os.environ["PARENT_PID"] = str(os.getpid())  # for our own children


jax.config.update("jax_cpu_collectives_implementation", "gloo")
if "JAX_PROCESS_ID" in os.environ:  # started by the launcher (or by anything that imports us)
    _die_with_parent()
    jax.distributed.initialize(  # HANG: init
        os.environ["JAX_COORDINATOR"],
        num_processes=2,
        process_id=int(os.environ["JAX_PROCESS_ID"]),
    )


def decode(record: bytes) -> np.ndarray:
    return np.frombuffer(zlib.decompress(record), dtype=np.float32).reshape(8, 4)


def make_shard(process_id: int) -> list:
    n = 48 if process_id == 0 else 2400
    rng = np.random.default_rng(process_id)
    return [zlib.compress(rng.normal(size=(8, 4)).astype(np.float32).tobytes()) for _ in range(n)]


def batches(shard: list, epoch: int):
    num_workers = 2 if len(shard) > 1000 and epoch > 0 else 0  # big shards get decode workers
    if num_workers:
        with mp.get_context("spawn").Pool(num_workers) as pool:  # HANG: pool
            for i in range(0, 48, 8):
                yield np.stack(pool.map(decode, shard[i : i + 8]))
    else:
        for i in range(0, 48, 8):
            yield np.stack([decode(r) for r in shard[i : i + 8]])


def train() -> None:
    pid = jax.process_index()
    shard = make_shard(pid)
    w = jnp.zeros((4,))

    @jax.jit
    def grad_fn(w, x):
        def loss_fn(w):
            return jnp.mean((x @ w - 1.0) ** 2)

        return jax.value_and_grad(loss_fn)(w)

    step = 0
    for epoch in range(3):
        for x in batches(shard, epoch):
            loss, g = grad_fn(w, jnp.asarray(x.reshape(-1, 4)))
            g_all = multihost_utils.process_allgather(g)
            w = w - 0.1 * g_all.mean(axis=0)
            print(f"process {pid} epoch {epoch} step {step} loss {float(loss):.4f}", flush=True)
            step += 1
    jax.distributed.shutdown()


def launch() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    procs = []
    for i in range(2):
        env = dict(os.environ, JAX_COORDINATOR=f"127.0.0.1:{port}", JAX_PROCESS_ID=str(i))
        env["PARENT_PID"] = str(os.getpid())
        procs.append(subprocess.Popen([sys.executable, __file__], env=env, preexec_fn=_die_with_parent))
    codes = [p.wait() for p in procs]
    print(f"launcher: exit codes {codes}", flush=True)
    sys.exit(1 if any(codes) else 0)


if __name__ == "__main__":
    if "JAX_PROCESS_ID" in os.environ:
        train()
    else:
        launch()
