"""Source: https://github.com/jax-ml/jax/issues/2777 (slow compile, superlinear in the length of
an unrolled Python loop under jit; also jax-ml/jax#4436, "takes more than 15 seconds")
Mechanism (healthy): the model unrolls 450 recurrent steps in a Python for-loop under jax.jit.
XLA spends 20-40 s compiling it with no step printed, then training runs normally and ends."""

import time

import jax
import jax.numpy as jnp

UNROLL = 450


@jax.jit
def rollout(x, w):
    for i in range(UNROLL):  # a Python loop: traced and compiled fully unrolled
        x = jnp.tanh(x @ w) * (1.0 + 0.001 * i) + x[::-1]
    return jnp.mean(x**2)


def main() -> None:
    x = jnp.ones((8, 8)) * 0.1
    w = jnp.eye(8) * 0.5
    start = time.time()
    print("compiling the unrolled rollout...", flush=True)
    loss = rollout(x, w)  # the long compile happens here
    print(f"compiled in {time.time() - start:.1f}s, loss {float(loss):.5f}", flush=True)
    for step in range(5):
        w = w * 0.999  # a fixed decay stands in for the optimiser
        print(f"step {step} loss {float(rollout(x, w)):.5f}", flush=True)
    print("done", flush=True)


if __name__ == "__main__":
    main()
