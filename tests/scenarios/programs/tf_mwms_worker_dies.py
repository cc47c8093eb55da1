"""Source: https://github.com/tensorflow/tensorflow/issues/35878 (MultiWorkerMirroredStrategy:
workers hang; see also tensorflow/recommenders#274)
Mechanism: two MultiWorkerMirroredStrategy workers on loopback run a custom training loop whose
gradients are all-reduced across workers. Worker 1 raises on a bad batch at step 3 and exits;
worker 0 is left inside the step's collective all-reduce, waiting for a peer that is gone."""

import ctypes
import json
import os
import signal
import subprocess
import sys

PORTS = [29911, 29912]


def _die_with_parent():
    ctypes.CDLL("libc.so.6").prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def worker(index: int) -> None:
    workers = [f"127.0.0.1:{p}" for p in PORTS]
    os.environ["TF_CONFIG"] = json.dumps({"cluster": {"worker": workers}, "task": {"type": "worker", "index": index}})
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = "2"
    import tensorflow as tf

    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    with strategy.scope():
        w = tf.Variable(tf.zeros(8))

    @tf.function
    def step_fn(x):
        def replica(x):
            grad = w - x
            total = tf.distribute.get_replica_context().all_reduce("mean", grad)  # HANG: allreduce
            w.assign_sub(0.1 * total)
            return tf.reduce_sum(total)
        return strategy.run(replica, args=(x,))

    for step in range(10):
        if index == 1 and step == 3:
            raise ValueError(f"worker {index}: bad batch at step {step}")  # HANG: raise
        loss = step_fn(tf.fill([8], float(step)))
        print(f"worker {index}: step {step} loss {float(loss):.3f}", flush=True)


def main() -> None:
    procs = [subprocess.Popen([sys.executable, __file__, str(i)], preexec_fn=_die_with_parent) for i in range(2)]
    sys.exit(max(p.wait() for p in procs))


if __name__ == "__main__":
    if len(sys.argv) > 1:
        worker(int(sys.argv[1]))
    else:
        main()
