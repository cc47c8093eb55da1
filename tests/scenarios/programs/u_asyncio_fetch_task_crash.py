"""Single-process training whose batches come from an asyncio loader: a few fetch tasks
download and parse JSON records concurrently and put them on an asyncio.Queue; the training
loop drives the event loop with `run_until_complete()` to take one batch at a time.

Written from https://github.com/aosabook/500lines/issues/288 ("Crawler stuck on async
queue.get()"): an exception raised inside one of the worker tasks silently ends that task (the
exception is stored in the Task and nobody awaits it, so nothing is printed while the task
object is alive), and the consumer sits in `await queue.get()` for ever. Here every fetch task
eventually hits a malformed record, the queue runs dry, and the training loop waits in the
event loop's selector with nothing left that could put an item.
"""

import asyncio
import json

import torch
from torch import nn

FEATURES = 16


async def fetch_record(shard: int, i: int) -> str:
    await asyncio.sleep(0.002)  # object-store GET
    if i == 40 + shard * 3:
        return '{"x": [0.1, 0.2, 0.3'  # truncated object
    x = [((shard * 13 + i * 7 + j) % 17) / 17 for j in range(FEATURES)]
    return json.dumps({"x": x, "y": i % 4})


class AsyncBatchLoader:
    def __init__(self, shards: int, per_shard: int, batch_size: int) -> None:
        self.loop = asyncio.new_event_loop()
        self.batch_size = batch_size
        self.total = shards * per_shard
        self.queue: asyncio.Queue = asyncio.Queue(maxsize=4 * batch_size)
        self.tasks = [self.loop.create_task(self._fetch_shard(s, per_shard)) for s in range(shards)]

    async def _fetch_shard(self, shard: int, count: int) -> None:
        for i in range(count):
            record = json.loads(await fetch_record(shard, i))
            await self.queue.put((record["x"], record["y"]))

    async def _next_batch(self):
        items = []
        while len(items) < self.batch_size:
            items.append(await self.queue.get())  # HANG: await-get
        x = torch.tensor([item[0] for item in items])
        return x, torch.tensor([item[1] for item in items])

    def __iter__(self):
        for _ in range(self.total // self.batch_size):
            yield self.loop.run_until_complete(self._next_batch())  # HANG: run-until-complete


def main() -> None:
    loader = AsyncBatchLoader(shards=4, per_shard=250, batch_size=16)
    model = nn.Sequential(nn.Linear(FEATURES, 32), nn.ReLU(), nn.Linear(32, 4))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    for epoch in range(2):
        for step, (x, y) in enumerate(loader):
            loss = nn.functional.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            print(f"epoch {epoch} step {step} loss {loss.item():.4f}", flush=True)


if __name__ == "__main__":
    main()
