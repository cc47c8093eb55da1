"""Streaming training where DataLoader workers pull shard names from a shared work queue.

From https://github.com/meridianlabs-ai/inspect_scout/pull/57 ("Producer sends wrong number of
parse job sentinels causing deadlock"). An IterableDataset shares one multiprocessing.Queue of
shard names between its DataLoader workers, so that a fast worker takes more shards; the main
process fills it at the start of the epoch and ends it with a single `None`. The first worker
to read the `None` stops; the other one waits on the queue for a shard that never comes.
"""

import multiprocessing as mp

import torch
from torch import nn
from torch.utils.data import DataLoader, IterableDataset

N_SHARDS = 12
SHARD_SIZE = 300
FEATURES = 20
BATCH_SIZE = 50
NUM_WORKERS = 2


def make_shards():
    shards = {}
    g = torch.Generator().manual_seed(0)
    w = torch.randn(FEATURES, generator=g)
    for k in range(N_SHARDS):
        x = torch.randn(SHARD_SIZE, FEATURES, generator=g)
        y = (x @ w + 0.3 * torch.randn(SHARD_SIZE, generator=g)).unsqueeze(1)
        shards[f"train-{k:05d}-of-{N_SHARDS:05d}"] = (x, y)
    return shards


class ShardQueueDataset(IterableDataset):
    def __init__(self, shards):
        self.shards = shards
        self.work = mp.Queue()

    def start_epoch(self, epoch):
        names = sorted(self.shards)
        order = torch.randperm(len(names), generator=torch.Generator().manual_seed(epoch))
        for i in order.tolist():
            self.work.put(names[i])
        self.work.put(None)  # HANG: one-sentinel

    def __iter__(self):
        while True:
            name = self.work.get()  # HANG: shard-get
            if name is None:
                return
            x, y = self.shards[name]
            for i in range(len(x)):
                yield x[i], y[i]


def main():
    dataset = ShardQueueDataset(make_shards())
    loader = DataLoader(dataset, batch_size=BATCH_SIZE, num_workers=NUM_WORKERS)
    model = nn.Sequential(nn.Linear(FEATURES, 32), nn.Tanh(), nn.Linear(32, 1))
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    loss_fn = nn.MSELoss()
    for epoch in range(3):
        dataset.start_epoch(epoch)
        for step, (x, y) in enumerate(loader):  # HANG: loader-next
            loss = loss_fn(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            print(f"epoch {epoch} step {step} loss {loss.item():.4f}", flush=True)
        print(f"epoch {epoch} done", flush=True)


if __name__ == "__main__":
    main()
