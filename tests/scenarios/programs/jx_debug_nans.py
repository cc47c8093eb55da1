"""Source: https://github.com/jax-ml/jax/issues/9092 (NaNs appear during optimisation; found with
jax_debug_nans)
Mechanism: the loss takes log(sigma) of a learned scale that the optimiser drives negative at
step 3. With jax_debug_nans on, JAX re-runs the step op by op and raises FloatingPointError at
the log; the job fails."""

import jax
import jax.numpy as jnp

jax.config.update("jax_debug_nans", True)


def nll(params, x):
    mu, sigma = params
    return jnp.mean(jnp.log(sigma) + (x - mu) ** 2 / (2 * sigma**2))  # HANG: log


@jax.jit
def train_step(params, x):
    loss, grads = jax.value_and_grad(nll)(params, x)
    return jax.tree.map(lambda p, g: p - 0.9 * g, params, grads), loss


def main() -> None:
    x = jax.random.normal(jax.random.PRNGKey(0), (256,)) * 0.1 + 3.0
    params = (jnp.float32(3.0), jnp.float32(1.0))  # warm start from the last run
    for step in range(50):
        params, loss = train_step(params, x)  # HANG: step
        print(f"step {step} loss {float(loss):.4f} sigma {float(params[1]):.4f}", flush=True)


if __name__ == "__main__":
    main()
