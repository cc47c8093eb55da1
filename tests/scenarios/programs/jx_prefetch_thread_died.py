"""Source: https://github.com/google/flax/issues/1287 (flax's prefetch_to_device pattern: a host
thread feeds device batches through a bounded queue)
Mechanism: a background thread decodes records, device_puts them and fills a prefetch queue of
size 2. One record is corrupt, the thread dies with the exception (printed on stderr), and the
training loop waits in queue.get() for a batch that will never come."""

import queue
import threading

import jax
import jax.numpy as jnp
import numpy as np


def decode(record: bytes) -> np.ndarray:
    if record.startswith(b"\x00"):
        raise ValueError(f"corrupt record header {record[:4]!r}")  # HANG: raise
    return np.frombuffer(record, dtype=np.uint8).astype(np.float32)[:16] / 255.0


def prefetch_to_device(records, size=2):
    q: queue.Queue = queue.Queue(maxsize=size)

    def producer():
        for rec in records:
            q.put(jax.device_put(decode(rec).reshape(4, 4)))
        q.put(None)

    threading.Thread(target=producer, daemon=True, name="prefetch").start()
    while True:
        batch = q.get()  # HANG: get
        if batch is None:
            return
        yield batch


@jax.jit
def train_step(w, batch):
    loss, grad = jax.value_and_grad(lambda w: jnp.mean((batch @ w) ** 2))(w)
    return w - 0.1 * grad, loss


def main() -> None:
    records = [bytes([1 + i] * 16) for i in range(5)] + [b"\x00" * 16] + [bytes([9] * 16)] * 10
    w = jnp.ones(4)
    for step, batch in enumerate(prefetch_to_device(records)):
        w, loss = train_step(w, batch)
        print(f"step {step} loss {float(loss):.5f}", flush=True)
    print("done", flush=True)


if __name__ == "__main__":
    main()
