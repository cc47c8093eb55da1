"""Source: https://github.com/marin-community/marin/issues/5319 (process 0's experiment-tracker resume fetch)
A two-process JAX data-parallel job logs metrics from process 0 only, through a small tracker whose
background thread syncs the run's state with a tracking server while holding the tracker's lock.
The server accepts the connection but never answers, so process 0's main thread waits for the
lock at its first log call, while process 1 is already in the next step's cross-process all-gather."""

import ctypes
import json
import signal
import socket
import subprocess
import sys
import threading


def _die_with_parent():
    ctypes.CDLL("libc.so.6").prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


class Tracker:
    """Process 0's metrics tracker: log() buffers, a thread syncs the run with the server."""

    def __init__(self, server: str):
        self.server = server
        self.lock = threading.Lock()
        self.buffer: list[dict] = []
        self.resumed_step = None
        threading.Thread(target=self._sync, name="tracker-sync", daemon=True).start()

    def _sync(self) -> None:
        with self.lock:
            host, port = self.server.split(":")
            conn = socket.create_connection((host, int(port)))
            conn.sendall(b'{"op": "resume", "run": "lm-small"}\n')
            reply = conn.recv(65536)  # HANG: recv
            self.resumed_step = json.loads(reply).get("step")

    def log(self, metrics: dict) -> None:
        with self.lock:  # HANG: lock
            self.buffer.append(metrics)


def worker(process_id: int, port: int, tracker_server: str) -> None:
    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax.experimental import multihost_utils

    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(f"127.0.0.1:{port}", num_processes=2, process_id=process_id)
    tracker = Tracker(tracker_server) if jax.process_index() == 0 else None

    rng = np.random.default_rng(process_id)
    w = jnp.zeros((8,))
    grad_fn = jax.jit(jax.value_and_grad(lambda w, x, y: jnp.mean((x @ w - y) ** 2)))
    for step in range(50):
        x = rng.normal(size=(32, 8)).astype(np.float32)
        loss, g = grad_fn(w, x, x[:, 0])
        grads = multihost_utils.process_allgather(g)  # HANG: allgather
        w = w - 0.1 * grads.mean(axis=0)
        print(f"process {process_id} step {step} loss {float(loss):.4f}", flush=True)
        if tracker is not None:
            tracker.log({"step": step, "loss": float(loss)})


def main() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    # the tracking server of this cluster: it accepts connections but is wedged and never replies
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    tracker_server = f"127.0.0.1:{server.getsockname()[1]}"
    procs = [
        subprocess.Popen(
            [sys.executable, __file__, str(i), str(port), tracker_server], preexec_fn=_die_with_parent
        )
        for i in range(2)
    ]
    sys.exit(max(p.wait() for p in procs))


if __name__ == "__main__":
    if len(sys.argv) > 1:
        worker(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3])
    else:
        main()
