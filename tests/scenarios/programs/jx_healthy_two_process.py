"""Source: https://github.com/jax-ml/jax/issues/22740 (the two-process jax.distributed setup the
report starts from, here on loopback CPU with gloo collectives)
Mechanism (healthy): two JAX processes on one host, joined by jax.distributed.initialize, each
step all-gathers gradients across processes; steps take ~2 s (slow host work) and both
processes finish their 8 steps and exit cleanly."""

import ctypes
import signal
import subprocess
import sys
import time

PORT = 29836


def _die_with_parent():
    ctypes.CDLL("libc.so.6").prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def worker(process_id: int) -> None:
    import jax
    import jax.numpy as jnp
    from jax.experimental import multihost_utils

    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(f"127.0.0.1:{PORT}", num_processes=2, process_id=process_id)
    w = jnp.zeros(4)
    for step in range(8):
        time.sleep(2.0)  # host-side preprocessing of this process's batch
        grad = jnp.full(4, float(step + process_id)) - w
        grads = multihost_utils.process_allgather(grad)
        w = w + 0.1 * grads.mean(axis=0)
        print(f"process {process_id}: step {step} w0={float(w[0]):.3f}", flush=True)
    print(f"process {process_id}: done", flush=True)


def main() -> None:
    procs = [
        subprocess.Popen([sys.executable, __file__, str(i)], preexec_fn=_die_with_parent)
        for i in range(2)
    ]
    sys.exit(max(p.wait() for p in procs))


if __name__ == "__main__":
    if len(sys.argv) > 1:
        worker(int(sys.argv[1]))
    else:
        main()
