"""Training on a streamed dataset: an IterableDataset that, in each DataLoader worker,
decodes records in a background thread and hands them over through a queue. One record is
corrupt; the decoding thread dies of the exception inside worker 1, whose iterator then waits
for a record that no thread is left to produce, and the training loop waits for that worker.

Written from https://github.com/meta-pytorch/data/pull/1003 ("Forward worker exceptions and exit
with it": torchdata's thread prefetcher hung when its source raised) and
https://github.com/RadarML/red-rover/issues/23 ("Prefetch hangs forever if the iterator raises
an exception"), placed inside DataLoader workers as torchdata-style pipelines do.
"""

import json
import queue
import threading

import torch
from torch import nn
from torch.utils.data import DataLoader, IterableDataset, get_worker_info


def records(worker: int, count: int):
    for i in range(count):
        line = json.dumps({"x": [((i * 5 + j + worker) % 11) / 11 for j in range(6)],
                           "y": (i + worker) % 2})
        yield line[:-7] if worker == 1 and i == 40 else line  # a record cut short


class DecodedStream(IterableDataset):
    def __init__(self, count: int) -> None:
        self.count = count

    def _decode(self, lines, out: queue.Queue) -> None:
        for line in lines:
            record = json.loads(line)  # HANG: decode
            out.put((torch.tensor(record["x"]), record["y"]))
        out.put(None)

    def __iter__(self):
        worker = get_worker_info().id
        out: queue.Queue = queue.Queue(maxsize=8)
        threading.Thread(target=self._decode, args=(records(worker, self.count), out),
                         daemon=True).start()
        while (item := out.get()) is not None:  # HANG: next-record
            yield item


def main() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 2))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = DataLoader(DecodedStream(400), batch_size=8, num_workers=2)
    for step, (x, y) in enumerate(loader):
        loss = nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(f"step {step} loss {loss.item():.4f}", flush=True)


if __name__ == "__main__":
    main()
