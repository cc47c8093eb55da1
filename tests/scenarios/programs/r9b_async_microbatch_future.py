"""Offline evaluation through an asyncio micro-batching front end: request coroutines submit one
example each and await an asyncio future; a batcher thread groups pending examples, runs the
model on the batch and completes the futures with the predictions.

Written from https://github.com/griptape-ai/griptape-nodes-engine/pull/5466 ("Settle a pending
request on the loop that owns its future": settling an asyncio future with a bare `set_result`
from another thread "schedules the waiting task's wakeup through `future._loop.call_soon`,
which is not threadsafe and does not wake a loop sitting in its selector"; see also
tornadoweb/tornado#2189). While requests are still being paced with `asyncio.sleep`, the loop
wakes every few milliseconds and picks the callbacks up, so everything seems to work. After
the last request the loop only waits for the futures, has no timer left, and sleeps in the
selector for ever: the batcher's `set_result` calls never wake it.
"""

import asyncio
import queue
import threading
import time

import torch
import torch.nn as nn

torch.set_num_threads(1)


class MicroBatcher:
    def __init__(self, model, loop, max_batch=16, window_s=0.02):
        self.model, self.loop = model, loop
        self.max_batch, self.window_s = max_batch, window_s
        self.pending = queue.Queue()
        self.batches = 0
        threading.Thread(target=self._run, name="batcher", daemon=True).start()

    def submit(self, x):
        fut = self.loop.create_future()
        self.pending.put((x, fut))
        return fut

    def _run(self):
        while True:
            items = [self.pending.get()]
            time.sleep(self.window_s)  # collect a batch
            while len(items) < self.max_batch:
                try:
                    items.append(self.pending.get_nowait())
                except queue.Empty:
                    break
            with torch.no_grad():
                logits = self.model(torch.stack([x for x, _ in items]))
            self.batches += 1
            for (_, fut), row in zip(items, logits, strict=True):
                fut.set_result(int(row.argmax()))  # HANG: set-result-off-loop


async def classify(batcher, x, label):
    pred = await batcher.submit(x)
    return pred == label


async def run_eval(model, data, labels):
    batcher = MicroBatcher(model, asyncio.get_running_loop())
    tasks = []
    for i in range(len(data)):
        await asyncio.sleep(0.005)  # replay the recorded request rate
        tasks.append(asyncio.create_task(classify(batcher, data[i], int(labels[i]))))
        if i % 100 == 0:
            done = sum(t.done() for t in tasks)
            print(f"sent {i} requests, {done} answered, {batcher.batches} batches", flush=True)
    print("all requests sent, waiting for the last answers", flush=True)
    results = await asyncio.gather(*tasks)
    return sum(results) / len(results)


def main():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 4)).eval()
    data = torch.randn(400, 32)
    labels = model(data).argmax(dim=1)
    labels[::7] = (labels[::7] + 1) % 4  # some noise so accuracy is not trivially 1
    print(f"evaluating {len(data)} examples through the async front end", flush=True)
    acc = asyncio.run(run_eval(model, data, labels))
    print(f"accuracy={acc:.3f}", flush=True)


if __name__ == "__main__":
    main()
