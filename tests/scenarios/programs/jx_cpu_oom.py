"""Source: https://github.com/jax-ml/jax/issues/22755 (XlaRuntimeError RESOURCE_EXHAUSTED: Out of
memory while trying to allocate N bytes; see also google-deepmind/alphafold#1023)
Mechanism: the sequence length was raised from 2k to 512k and the attention bias matrix is
materialised as a dense seq x seq float32 array: about 1 TiB. The CPU backend cannot allocate
it and raises RESOURCE_EXHAUSTED (out of memory); the job fails after the first, small run."""

import jax
import jax.numpy as jnp

DIM = 16


@jax.jit
def attention_step(q, k, v, bias):
    scores = q @ k.T / jnp.sqrt(DIM) + bias
    return jax.nn.softmax(scores, axis=-1) @ v


def main() -> None:
    for seq in (2048, 512 * 1024):  # the second was 2048 until the long-context change
        key = jax.random.PRNGKey(seq)
        q = jax.random.normal(key, (seq, DIM))
        bias = jnp.zeros((seq, seq), dtype=jnp.float32)  # HANG: alloc
        out = attention_step(q, q, q, bias)
        print(f"seq {seq}: out mean {float(out.mean()):.5f}", flush=True)


if __name__ == "__main__":
    main()
