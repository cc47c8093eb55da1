"""Source: https://github.com/marin-community/marin/pull/7232 (see also jax-ml/jax#22740)
Mechanism: a two-process JAX job whose launcher starts only process 0 (process 1's host is
still being set up and never comes). Process 0 sits in jax.distributed.initialize, in the
coordination service's RegisterTask barrier, until initialization_timeout (300 s)."""

import ctypes
import signal
import subprocess
import sys

PORT = 29831


def _die_with_parent():
    ctypes.CDLL("libc.so.6").prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def worker(process_id: int) -> None:
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    print(f"process {process_id}: joining 127.0.0.1:{PORT}", flush=True)
    jax.distributed.initialize(  # HANG: init
        coordinator_address=f"127.0.0.1:{PORT}", num_processes=2, process_id=process_id
    )
    w = jnp.zeros(4)
    for step in range(5):
        w = w - 0.1 * jnp.ones(4)
        print(f"process {process_id}: step {step}", flush=True)


def main() -> None:
    started = [0]  # the scheduler has placed process 0 only; process 1 is still pending
    procs = [
        subprocess.Popen([sys.executable, __file__, str(i)], preexec_fn=_die_with_parent)
        for i in started
    ]
    sys.exit(max(p.wait() for p in procs))


if __name__ == "__main__":
    if len(sys.argv) > 1:
        worker(int(sys.argv[1]))
    else:
        main()
