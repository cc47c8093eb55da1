"""Source: https://github.com/tensorflow/tensorflow/issues/36574 ("ValueError: tf.function-decorated
function tried to create variables on non-first call" in an iterative pruning loop)
Mechanism: iterative magnitude pruning with a custom training loop. One module-level
`@tf.function` train step takes the model and the optimizer as arguments; each pruning round
builds a fresh model and a fresh Adam optimizer and trains it with the same step. Round 0
trains fine; in round 1 the retraced step makes the new optimizer create its slot variables
inside the function, and tf.function raises ValueError."""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import keras
import numpy as np
import tensorflow as tf

loss_fn = keras.losses.SparseCategoricalCrossentropy()


@tf.function
def train_step(model, optimizer, x, y):
    with tf.GradientTape() as tape:
        loss = loss_fn(y, model(x, training=True))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables, strict=True))  # HANG: apply
    return loss


def make_model(masks=None):
    model = keras.Sequential(
        [
            keras.Input((32,)),
            keras.layers.Dense(64, activation="relu"),
            keras.layers.Dense(10, activation="softmax"),
        ]
    )
    if masks is not None:
        for var, mask in zip(model.trainable_variables, masks, strict=True):
            var.assign(var * mask)
    return model


def main() -> None:
    rng = np.random.default_rng(0)
    x = rng.random((2048, 32), dtype=np.float32)
    y = (x[:, :10].argmax(axis=1)).astype(np.int64)
    ds = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(2048).batch(64)
    masks = None
    for round_ in range(3):
        model = make_model(masks)
        optimizer = keras.optimizers.Adam(1e-3)  # HANG: new-optimizer
        for epoch in range(2):
            for step, (xb, yb) in enumerate(ds):
                loss = train_step(model, optimizer, xb, yb)  # HANG: call
                if step % 10 == 0:
                    print(
                        f"round {round_} epoch {epoch} step {step} loss {float(loss):.4f}",
                        flush=True,
                    )
        # prune the 20% smallest weights of each kernel for the next round
        masks = []
        for var in model.trainable_variables:
            w = np.abs(var.numpy())
            masks.append(
                (w > np.quantile(w, 0.2)).astype(np.float32) if w.ndim == 2 else np.ones_like(w)
            )
        print(
            f"round {round_}: pruned, {sum(int(m.sum()) for m in masks)} weights left", flush=True
        )
    print("done", flush=True)


if __name__ == "__main__":
    main()
