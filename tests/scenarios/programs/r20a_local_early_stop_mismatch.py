"""Data-parallel JAX regression with per-host early stopping on an un-reduced val loss.

Source: https://github.com/huggingface/transformers/issues/17478
  "As the metrics are different for each process, one process can stop the training and
  enter dist.barrier while the others go on training. This results in hanging training."
  (metrics were not gathered across processes before EarlyStoppingCallback looked at them)

What happens:
  Two JAX processes (started by this file, gloo CPU collectives) train one linear model
  with data parallelism: every train step is a jitted shard_map whose gradients are
  averaged with lax.pmean over the two processes, so both processes must enter every step.
  At the end of each epoch every process evaluates on ITS OWN validation shard and feeds
  that local number into an EarlyStopping helper; the value is never all-reduced.
  Process 0's validation shard was exported with targets in other units (scaled by 0.3),
  so its local val loss bottoms out after a couple of epochs and then rises: process 0
  runs out of patience, leaves the loop and calls sync_global_devices("train_done")
  (a cross-process all-gather) before writing its final checkpoint. Process 1's val loss
  is still improving, so it starts the next epoch and its first train step's gradient
  all-reduce never completes (dispatch is asynchronous, so its Python thread waits where it
  fetches that step's loss for the log line). The two processes now wait in different
  collectives forever: process 0 in the barrier all-gather, process 1 in the train step's
  pmean.
"""
import os
import subprocess
import sys
import tempfile
import time

NPROC = 2


def _die_with_parent():
    import ctypes
    import signal
    ctypes.CDLL("libc.so.6").prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def launch():
    import random
    port = random.randint(20000, 40000)
    workdir = tempfile.mkdtemp(prefix="r20a_es_")
    procs = []
    for rank in range(NPROC):
        env = dict(os.environ, R20A_RANK=str(rank), R20A_PORT=str(port),
                   R20A_DIR=workdir, XLA_FLAGS="--xla_cpu_multi_thread_eigen=false")
        procs.append(subprocess.Popen([sys.executable, os.path.abspath(__file__)], env=env,
                                      preexec_fn=_die_with_parent))
    print(f"[launcher] started {NPROC} workers on port {port}, workdir {workdir}", flush=True)
    rc = 0
    for p in procs:
        rc = p.wait() or rc
    print(f"[launcher] all workers exited rc={rc}", flush=True)
    sys.exit(rc)


class EarlyStopping:
    def __init__(self, patience=2, min_delta=1e-3):
        self.patience, self.min_delta = patience, min_delta
        self.best, self.bad_epochs = float("inf"), 0

    def should_stop(self, val_loss):
        if val_loss < self.best - self.min_delta:
            self.best, self.bad_epochs = val_loss, 0
        else:
            self.bad_epochs += 1
        return self.bad_epochs >= self.patience


def worker(rank):
    import numpy as np
    import jax
    import jax.numpy as jnp
    from jax.sharding import Mesh, PartitionSpec as P, NamedSharding
    from jax.experimental import multihost_utils

    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(coordinator_address=f"127.0.0.1:{os.environ['R20A_PORT']}",
                               num_processes=NPROC, process_id=rank)
    tag = f"[proc {rank}]"
    mesh = Mesh(np.array(jax.devices()), ("dp",))
    dim, local_bs, steps_per_epoch = 32, 64, 25

    # every host generates its own train / val shard from the same teacher
    rng = np.random.default_rng(1234)
    w_true = rng.normal(size=(dim,)).astype(np.float32)
    rng = np.random.default_rng(100 + rank)
    x_train = rng.normal(size=(steps_per_epoch * local_bs, dim)).astype(np.float32)
    y_train = (x_train @ w_true + 0.1 * rng.normal(size=len(x_train))).astype(np.float32)
    x_val = rng.normal(size=(512, dim)).astype(np.float32)
    y_val = (x_val @ w_true).astype(np.float32)
    if rank == 0:
        y_val = 0.3 * y_val  # this host's val export used other units; nobody noticed

    def loss_fn(w, x, y):
        return jnp.mean((x @ w - y) ** 2)

    def local_step(w, x, y):
        loss, g = jax.value_and_grad(loss_fn)(w, x, y)
        g = jax.lax.pmean(g, "dp")
        loss = jax.lax.pmean(loss, "dp")
        return w - 0.01 * g, loss

    train_step = jax.jit(jax.shard_map(local_step, mesh=mesh,
                                       in_specs=(P(), P("dp"), P("dp")),
                                       out_specs=(P(), P())))
    eval_loss = jax.jit(loss_fn)

    def global_batch(a):
        return multihost_utils.host_local_array_to_global_array(a, mesh, P("dp"))

    w = jax.device_put(jnp.zeros((dim,), jnp.float32), NamedSharding(mesh, P()))
    stopper = EarlyStopping(patience=2)
    print(f"{tag} start training", flush=True)
    for epoch in range(100):
        for i in range(steps_per_epoch):
            sl = slice(i * local_bs, (i + 1) * local_bs)
            w, loss = train_step(w, global_batch(x_train[sl]), global_batch(y_train[sl]))  # HANG: train_step_pmean
            step = epoch * steps_per_epoch + i
            if step % 5 == 0:
                print(f"{tag} step {step} loss {float(loss):.4f}", flush=True)  # HANG: loss_fetch_waits_on_pmean
            time.sleep(0.05)
        w_local = np.asarray(w.addressable_data(0))
        val = float(eval_loss(w_local, x_val, y_val))  # local shard only, never all-reduced
        print(f"{tag} epoch {epoch} val_loss {val:.4f}", flush=True)
        if stopper.should_stop(val):  # HANG: local_early_stop_decision
            print(f"{tag} early stopping at epoch {epoch}", flush=True)
            break

    multihost_utils.sync_global_devices("train_done")  # HANG: barrier_after_early_stop
    if rank == 0:
        np.save(os.path.join(os.environ["R20A_DIR"], "final_w.npy"), np.asarray(w.addressable_data(0)))
    print(f"{tag} done", flush=True)
    jax.distributed.shutdown()


if __name__ == "__main__":
    if "R20A_RANK" in os.environ:
        worker(int(os.environ["R20A_RANK"]))
    else:
        launch()
