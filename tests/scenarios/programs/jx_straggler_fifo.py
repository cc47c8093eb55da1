"""Source: https://github.com/marin-community/marin/pull/7929 (a gang stalled behind one host)
Mechanism: between steps, process 1 reloads its data shard from a mounted path that stops
answering (here a named pipe nobody writes to: open() blocks in the kernel). Process 0 is
already inside the next step's cross-process all-gather and waits for it forever."""

import ctypes
import os
import signal
import subprocess
import sys
import tempfile

PORT = 29834


def _die_with_parent():
    ctypes.CDLL("libc.so.6").prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def worker(process_id: int, shard_dir: str) -> None:
    import jax
    import jax.numpy as jnp
    from jax.experimental import multihost_utils

    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(f"127.0.0.1:{PORT}", num_processes=2, process_id=process_id)
    w = jnp.zeros(4)
    for step in range(6):
        if process_id == 1 and step == 2:
            with open(os.path.join(shard_dir, "shard-00001")) as f:  # HANG: read
                print(f.read(10))
        grads = multihost_utils.process_allgather(jnp.ones(4) * (process_id + 1))  # HANG: allgather
        w = w - 0.1 * grads.mean(axis=0)
        print(f"process {process_id}: step {step}", flush=True)


def main() -> None:
    shard_dir = tempfile.mkdtemp()
    os.mkfifo(os.path.join(shard_dir, "shard-00001"))  # the stalled mount
    procs = [
        subprocess.Popen([sys.executable, __file__, str(i), shard_dir], preexec_fn=_die_with_parent)
        for i in range(2)
    ]
    sys.exit(max(p.wait() for p in procs))


if __name__ == "__main__":
    if len(sys.argv) > 1:
        worker(int(sys.argv[1]), sys.argv[2])
    else:
        main()
