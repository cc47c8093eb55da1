"""Source: https://github.com/NVIDIA-Merlin/NVTabular/issues/1320 (workers with different numbers
of batches freeze; here the same failure in a multi-process JAX job)
Mechanism: each process iterates over its own file shard; process 1's shard holds 3 batches,
process 0's holds 5. Process 1 leaves the loop and waits in jax.distributed.shutdown()'s
barrier while process 0 waits in step 3's all-gather for a peer that will never call it."""

import ctypes
import signal
import subprocess
import sys

PORT = 29835
SHARD_BATCHES = {0: 5, 1: 3}  # the dataset did not split evenly across hosts


def _die_with_parent():
    ctypes.CDLL("libc.so.6").prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def worker(process_id: int) -> None:
    import jax
    import jax.numpy as jnp
    from jax.experimental import multihost_utils

    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(f"127.0.0.1:{PORT}", num_processes=2, process_id=process_id)
    w = jnp.zeros(4)
    for step in range(SHARD_BATCHES[process_id]):
        batch = jnp.full(4, float(step))
        grads = multihost_utils.process_allgather(batch - w)  # HANG: allgather
        w = w + 0.1 * grads.mean(axis=0)
        print(f"process {process_id}: step {step}", flush=True)
    print(f"process {process_id}: epoch done", flush=True)
    jax.distributed.shutdown()  # HANG: shutdown


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
