"""Async training driver: a reader thread decodes feature batches into a queue.Queue, and the
`async def train()` coroutine awaits each batch through `loop.run_in_executor(None, q.get)`,
always asking for the next one before training on the current one.

Written from https://github.com/jaredrhod/backtalk/issues/24 ("asyncio.run() deadlocks joining
blocked run_in_executor threads"): after the last step, one `q.get` is still parked in the
default ThreadPoolExecutor. Cancelling its asyncio future does not stop the thread, and
`asyncio.run()` then calls `loop.shutdown_default_executor()`, which joins that thread for ever.
The job prints its final loss and saves the model, then never exits.
"""

import asyncio
import queue
import threading

import torch
from torch import nn

STEPS, BATCH, DIM = 60, 64, 32


def reader(q, steps):
    g = torch.Generator().manual_seed(0)
    w = torch.randn(DIM, 1, generator=g)
    for _ in range(steps):
        x = torch.randn(BATCH, DIM, generator=g)
        q.put((x, x @ w + 0.1 * torch.randn(BATCH, 1, generator=g)))
    # the reader simply ends: the trainer knows how many steps there are


async def train():
    loop = asyncio.get_running_loop()
    q = queue.Queue(maxsize=8)
    threading.Thread(target=reader, args=(q, STEPS), daemon=True).start()
    model = nn.Linear(DIM, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    pending = loop.run_in_executor(None, q.get)
    for step in range(STEPS):
        x, y = await pending
        pending = loop.run_in_executor(None, q.get)  # HANG: prefetch-get
        loss = nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 10 == 0:
            print(f"step {step} loss {loss.item():.4f}", flush=True)
        await asyncio.sleep(0)
    pending.cancel()
    torch.save(model.state_dict(), "/tmp/r11a_async_model.pt")
    print(f"done: final loss {loss.item():.4f}, model saved", flush=True)


if __name__ == "__main__":
    asyncio.run(train())  # HANG: asyncio-run
