"""Custom TF training loop hangs after a memory-cleanup callback garbage-collects the local tf.data service worker.

Source: https://github.com/tensorflow/tensorflow/pull/56495
  "There is currently no documented way to stop a WorkerServer or DispatchServer. It gets
  automatically stopped on GC" (related report: tensorflow/tensorflow#56490, servers shut down
  while a consumer of a repeated distributed dataset keeps trying to reach them).

What happens:
  The script offloads preprocessing to an in-process tf.data service (a DispatchServer plus one
  WorkerServer), the way one tests a tf.data-service input pipeline on a single box before moving
  it to a cluster.  The WorkerServer object is owned only by the `InputPipeline` builder, which also
  holds the raw numpy arrays.  After epoch 0 a Keras callback (`ReleaseHostArrays`) frees host memory
  by dropping the builder and calling gc.collect() -- which destroys the WorkerServer; its __del__
  stops the gRPC worker.  The training iterator (a `distribute(...)` dataset) still has a task
  assigned to that worker; the dispatcher is alive, so the client does not fail: it drains the few
  elements it had buffered and then blocks forever in IteratorGetNext, retrying a worker that is
  gone and waiting for a task that no live worker will ever produce.  No error, no timeout, ~0% CPU.
"""
import gc
import os
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np
import tensorflow as tf
import keras

tf.config.threading.set_intra_op_parallelism_threads(1)
tf.config.threading.set_inter_op_parallelism_threads(2)

svc = tf.data.experimental.service
BATCH = 32
STEPS_PER_EPOCH = 60
EPOCHS = 4
WORKDIR = tempfile.mkdtemp(prefix="r19c_tfds_")


class InputPipeline:
    """Builds the training dataset and owns the local tf.data service worker."""

    def __init__(self, dispatcher_target, n=6000, dim=32, seed=0):
        rng = np.random.default_rng(seed)
        self.x = rng.normal(size=(n, dim)).astype("float32")
        w = rng.normal(size=(dim, 1)).astype("float32")
        self.y = (self.x @ w > 0).astype("float32")
        addr = dispatcher_target.split("://")[1]
        # the worker lives as long as this builder does
        self.worker = svc.WorkerServer(svc.WorkerConfig(dispatcher_address=addr))
        self.dispatcher_target = dispatcher_target

    def train_dataset(self):
        ds = tf.data.Dataset.from_tensor_slices((self.x, self.y))
        ds = ds.shuffle(2048, seed=1).repeat()
        ds = ds.map(lambda a, b: (a + tf.random.normal(tf.shape(a), stddev=0.05), b))
        ds = ds.batch(BATCH, drop_remainder=True)
        return ds.apply(svc.distribute(processing_mode="parallel_epochs",
                                       service=self.dispatcher_target,
                                       job_name="train"))


class ReleaseHostArrays(keras.callbacks.Callback):
    """After the first epoch the pipeline is 'warm'; drop the raw arrays to save host RAM."""

    def __init__(self, holder):
        super().__init__()
        self.holder = holder

    def on_epoch_end(self, epoch, logs=None):
        if epoch == 0 and "pipeline" in self.holder:
            del self.holder["pipeline"]   # HANG: builder_dropped
            gc.collect()                  # HANG: worker_server_collected
            print("[mem] released raw training arrays", flush=True)


def build_model():
    return keras.Sequential([
        keras.Input((32,)),
        keras.layers.Dense(64, activation="relu"),
        keras.layers.Dense(64, activation="relu"),
        keras.layers.Dense(1),
    ])


def main():
    dispatcher = svc.DispatchServer(svc.DispatcherConfig(port=0))
    holder = {"pipeline": InputPipeline(dispatcher.target)}
    train_ds = holder["pipeline"].train_dataset()

    model = build_model()
    opt = keras.optimizers.Adam(1e-3)
    loss_fn = keras.losses.BinaryCrossentropy(from_logits=True)
    callbacks = keras.callbacks.CallbackList([ReleaseHostArrays(holder)], model=model)

    @tf.function
    def train_step(it):
        xb, yb = next(it)
        with tf.GradientTape() as tape:
            logits = model(xb, training=True)
            loss = loss_fn(yb, logits)
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    it = iter(train_ds)
    callbacks.on_train_begin()
    t0 = time.time()
    for epoch in range(EPOCHS):
        callbacks.on_epoch_begin(epoch)
        for step in range(STEPS_PER_EPOCH):
            loss = train_step(it)   # HANG: next_on_dead_worker
            if step % 10 == 0:
                print(f"epoch {epoch} step {step} loss {float(loss):.4f} "
                      f"({time.time() - t0:.1f}s)", flush=True)
            time.sleep(0.05)  # stands in for a heavier model step
        callbacks.on_epoch_end(epoch, {"loss": float(loss)})
        model.save_weights(os.path.join(WORKDIR, f"ep{epoch}.weights.h5"))
    callbacks.on_train_end()
    print("training finished", flush=True)


if __name__ == "__main__":
    main()
