"""Source: https://github.com/aws/sagemaker-tensorflow-extensions/issues/10 (a dataset that reads
a FIFO, as SageMaker Pipe mode does, hangs when no writer feeds the pipe)
Mechanism: the training data is streamed through a named pipe that the platform's feeder process
should write to; the feeder never starts. TextLineDataset's reader thread blocks opening the
pipe, and the training loop waits forever for its first batch."""

import os
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import tensorflow as tf  # noqa: E402


def main() -> None:
    channel = os.path.join(tempfile.mkdtemp(), "train_0")
    os.mkfifo(channel)  # the channel exists, but its feeder was never launched
    ds = tf.data.TextLineDataset(channel)  # HANG: source
    ds = ds.map(lambda line: tf.strings.to_number(tf.strings.split(line, ","))).batch(8)
    model = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(1)])
    opt = tf.keras.optimizers.SGD(0.01)
    print("waiting for the first batch", flush=True)
    for step, batch in enumerate(ds):  # HANG: next
        x, y = batch[:, :4], batch[:, 4:]
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((model(x) - y) ** 2)
        opt.apply_gradients(zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables))
        print(f"step {step} loss {float(loss):.4f}", flush=True)


if __name__ == "__main__":
    main()
