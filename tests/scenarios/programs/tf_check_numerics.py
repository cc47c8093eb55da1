"""Source: https://github.com/tensorflow/models/issues/5516 ("LossTensor is inf or nan. : Tensor had
NaN values", an InvalidArgumentError from CheckNumerics)
Mechanism: a Gaussian negative log-likelihood takes log(sigma) of a learned scale; a too large
learning rate drives sigma negative at step 1. With tf.debugging.enable_check_numerics() the
Log op raises InvalidArgumentError ("Tensor had NaN values") and the job fails."""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import tensorflow as tf  # noqa: E402

tf.debugging.enable_check_numerics()


def main() -> None:
    x = tf.random.normal([256], seed=0) * 0.1 + 3.0
    mu = tf.Variable(3.0)
    sigma = tf.Variable(1.0)
    opt = tf.keras.optimizers.SGD(learning_rate=0.9)
    for step in range(50):
        with tf.GradientTape() as tape:
            nll = tf.math.log(sigma) + (x - mu) ** 2 / (2 * sigma**2)  # HANG: log
            loss = tf.reduce_mean(nll)
        grads = tape.gradient(loss, [mu, sigma])
        opt.apply_gradients(zip(grads, [mu, sigma]))
        print(f"step {step} loss {float(loss):.4f} sigma {float(sigma):.4f}", flush=True)


if __name__ == "__main__":
    main()
