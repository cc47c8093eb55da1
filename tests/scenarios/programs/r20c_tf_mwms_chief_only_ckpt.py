"""TF MultiWorkerMirroredStrategy custom loop where only the chief saves checkpoints.

Source: https://github.com/ray-project/raydp/pull/447
  raydp's TF estimator: "Only save checkpoint from the chief worker to avoid race conditions.
  However, we need to call save on all workers to avoid deadlock." (multi-worker Keras/TF
  saving runs collectives, so a chief-only save desynchronises the workers).

What happens:
  Two workers (started by this file, TF_CONFIG on 127.0.0.1) train a small Keras MLP with a
  custom training loop under MultiWorkerMirroredStrategy.  The model also tracks a
  `samples_seen` counter, a SyncOnRead variable (aggregation SUM) as custom loops usually do.
  To "avoid two workers writing the same files", the script calls CheckpointManager.save()
  only when `is_chief`.  Saving a SyncOnRead variable reads its cross-replica value, which
  under MWMS is a CollectiveReduce over both workers.  The chief therefore issues an
  all-reduce of shape [] while worker 1, which skipped the save, goes on to the next
  train step and issues the packed gradient all-reduce of shape [N] with the same
  collective instance key.  The collective executor detects the mismatch and aborts:
  the chief raises InvalidArgumentError ("Shape mismatch in the collective instance ...
  expected shape [] but another member in the group expected shape [N]") from
  CheckpointManager.save(), and worker 1 raises the same error from its train step.  Both
  workers exit 1 and the launcher exits 1.
"""
import json
import os
import random
import subprocess
import sys
import tempfile
import time

NUM_WORKERS = 2


def run_worker(index, ports, workdir):
    os.environ["TF_CONFIG"] = json.dumps({
        "cluster": {"worker": [f"127.0.0.1:{p}" for p in ports]},
        "task": {"type": "worker", "index": index},
    })
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import numpy as np
    import tensorflow as tf
    import keras

    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(2)

    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    is_chief = index == 0
    tag = f"[worker {index}]"

    data = np.load(os.path.join(workdir, "train.npz"))
    global_batch = 64
    ds = (tf.data.Dataset.from_tensor_slices((data["x"], data["y"]))
          .shuffle(2048, seed=index).repeat().batch(global_batch, drop_remainder=True))
    dist_ds = strategy.experimental_distribute_dataset(ds)

    with strategy.scope():
        model = keras.Sequential([
            keras.Input((data["x"].shape[1],)),
            keras.layers.Dense(64, activation="relu"),
            keras.layers.Dense(64, activation="relu"),
            keras.layers.Dense(1),
        ])
        optimizer = keras.optimizers.Adam(1e-3)
        samples_seen = tf.Variable(
            0.0, trainable=False, name="samples_seen",
            synchronization=tf.VariableSynchronization.ON_READ,
            aggregation=tf.VariableAggregation.SUM)

    ckpt = tf.train.Checkpoint(model=model, samples_seen=samples_seen)
    manager = tf.train.CheckpointManager(ckpt, os.path.join(workdir, "ckpt"), max_to_keep=2)

    @tf.function
    def train_step(iterator):
        def replica_fn(xb, yb):
            with tf.GradientTape() as tape:
                pred = model(xb, training=True)
                per_example = tf.reduce_mean(tf.square(pred - yb), axis=-1)
                loss = tf.nn.compute_average_loss(per_example, global_batch_size=global_batch)
            grads = tape.gradient(loss, model.trainable_variables)
            optimizer.apply_gradients(zip(grads, model.trainable_variables))
            samples_seen.assign_add(tf.cast(tf.shape(xb)[0], tf.float32))
            return loss

        xb, yb = next(iterator)
        per_replica = strategy.run(replica_fn, args=(xb, yb))
        return strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica, axis=None)

    def save_checkpoint(step):
        path = manager.save(checkpoint_number=step)  # HANG: chief_only_save_runs_collective
        print(f"{tag} saved checkpoint {path}", flush=True)

    iterator = iter(dist_ds)
    steps_per_epoch, epochs = 25, 3
    t0 = time.time()
    step = 0
    for epoch in range(epochs):
        for _ in range(steps_per_epoch):
            loss = train_step(iterator)
            step += 1
            if step % 5 == 0:
                print(f"{tag} epoch {epoch} step {step} loss {float(loss):.4f} "
                      f"({time.time() - t0:.1f}s)", flush=True)
        # only the chief writes checkpoints, so workers do not race on the same files
        if is_chief:
            save_checkpoint(step)  # HANG: chief_only_save_call
    print(f"{tag} training finished", flush=True)


def launcher():
    workdir = tempfile.mkdtemp(prefix="r20c_mwms_")
    import numpy as np
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4096, 16)).astype(np.float32)
    y = (np.tanh(x[:, :8].sum(1)) + 0.5 * x[:, 8]).astype(np.float32)[:, None]
    np.savez(os.path.join(workdir, "train.npz"), x=x, y=y)

    ports = random.sample(range(20000, 40000), NUM_WORKERS)
    procs = [subprocess.Popen([sys.executable, os.path.abspath(__file__), "--worker", str(i),
                               workdir] + [str(p) for p in ports])
             for i in range(NUM_WORKERS)]
    codes = [p.wait() for p in procs]
    print(f"[launcher] worker exit codes: {codes}", flush=True)
    sys.exit(0 if all(c == 0 for c in codes) else 1)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        run_worker(int(sys.argv[2]), [int(p) for p in sys.argv[4:]], sys.argv[3])
    else:
        launcher()
