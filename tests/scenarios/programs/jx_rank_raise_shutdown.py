"""Source: https://github.com/pytorch/xla/issues/7974 (the same pattern in JAX multi-process jobs)
Mechanism: process 1 of a two-process JAX job raises on a bad batch at step 2. Its traceback
is printed, but at exit jax.distributed.shutdown() waits in the shutdown barrier for process 0,
which waits forever in the step's cross-process all-gather: the whole job hangs."""

import ctypes
import signal
import subprocess
import sys

PORT = 29832


def _die_with_parent():
    ctypes.CDLL("libc.so.6").prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def worker(process_id: int) -> None:
    import jax
    import jax.numpy as jnp
    from jax.experimental import multihost_utils

    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(f"127.0.0.1:{PORT}", num_processes=2, process_id=process_id)
    w = jnp.zeros(4)
    for step in range(6):
        batch = jnp.full(4, float(step + process_id))
        if process_id == 1 and step == 2:
            raise ValueError(f"process 1: corrupt batch at step {step}")  # HANG: raise
        grad = batch - w
        grads = multihost_utils.process_allgather(grad)  # HANG: allgather
        w = w + 0.1 * grads.mean(axis=0)
        print(f"process {process_id}: step {step} w0={float(w[0]):.3f}", flush=True)


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
