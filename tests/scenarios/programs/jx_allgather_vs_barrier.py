"""Source: https://github.com/OpenMDAO/OpenMDAO/pull/2208 (a collective called under `if rank == 0`)
Mechanism: only process 0 gathers the eval metrics across processes (process_allgather inside
`if jax.process_index() == 0`); process 1 goes on to the checkpoint barrier of the coordination
service (as orbax does). Each waits in a different collective and neither ever completes."""

import ctypes
import signal
import subprocess
import sys

PORT = 29833


def _die_with_parent():
    ctypes.CDLL("libc.so.6").prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def worker(process_id: int) -> None:
    import jax
    import jax.numpy as jnp
    from jax._src import distributed
    from jax.experimental import multihost_utils

    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(f"127.0.0.1:{PORT}", num_processes=2, process_id=process_id)
    w = jnp.zeros(4)
    for step in range(3):
        grads = multihost_utils.process_allgather(jnp.ones(4) * (process_id + 1))
        w = w - 0.1 * grads.mean(axis=0)
        print(f"process {process_id}: step {step}", flush=True)
    eval_loss = jnp.array([float(w.sum()) + process_id])
    if jax.process_index() == 0:
        losses = multihost_utils.process_allgather(eval_loss)  # HANG: allgather
        print(f"eval losses {losses}", flush=True)
    # checkpoint: every process waits until all have written their shard
    distributed.global_state.client.wait_at_barrier("checkpoint_step_3", 300_000)  # HANG: barrier
    print(f"process {process_id}: checkpoint done", flush=True)


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
