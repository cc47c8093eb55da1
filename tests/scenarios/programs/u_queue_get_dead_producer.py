"""Single-process training with a background prefetch thread that parses JSON-lines
records into batches and hands them over through a queue.Queue.

Written from https://github.com/RadarML/red-rover/issues/23 ("Prefetch hangs forever if the
iterator raises an exception": the prefetch thread dies without telling the consumer) and
tilezen/tilequeue#131: one record in the file is truncated, `json.loads` raises in the
prefetch thread, the thread dies (its traceback goes to stderr), and the training loop waits
in `queue.get()` for a batch that no thread is left to produce.
"""

import json
import queue
import threading

import torch
from torch import nn


def records(count: int):
    for i in range(count):
        line = json.dumps({"x": [((i * 7 + j) % 13) / 13 for j in range(8)], "y": i % 3})
        yield line[: len(line) // 2] if i == 150 else line  # record 150 was cut short on upload


class Prefetcher:
    def __init__(self, lines, batch_size: int, depth: int = 4) -> None:
        self.queue: queue.Queue = queue.Queue(maxsize=depth)
        self.thread = threading.Thread(target=self._fill, args=(lines, batch_size), daemon=True)
        self.thread.start()

    def _fill(self, lines, batch_size: int) -> None:
        batch = []
        for line in lines:
            batch.append(json.loads(line))  # HANG: parse
            if len(batch) == batch_size:
                x = torch.tensor([r["x"] for r in batch])
                self.queue.put((x, torch.tensor([r["y"] for r in batch])))
                batch = []
        self.queue.put(None)

    def __iter__(self):
        while (item := self.queue.get()) is not None:  # HANG: get
            yield item


def main() -> None:
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for step, (x, y) in enumerate(Prefetcher(records(1000), batch_size=10)):
        loss = nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(f"step {step} loss {loss.item():.4f}", flush=True)


if __name__ == "__main__":
    main()
