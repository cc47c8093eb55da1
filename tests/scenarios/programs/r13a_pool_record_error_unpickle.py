"""Parse CSV shards in a multiprocessing.Pool before each epoch, then train on them.

From https://github.com/python/cpython/issues/103061 ("multiprocessing.Pool hangs on certain
custom Exceptions"). A worker hits a malformed line and raises the project's own RecordError,
whose __init__ takes (shard, lineno) but passes one formatted message to Exception.__init__.
The exception pickles, but unpickling it in the parent calls RecordError(message) and fails, which
kills the pool's result-handler thread; the trainer's pool.map() then waits for ever.
"""

import argparse
import multiprocessing as mp

import torch
from torch import nn

N_FEATURES = 4


class RecordError(Exception):
    """A malformed line in a shard (reported with its file and line number)."""

    def __init__(self, shard, lineno):  # HANG: exc-init
        super().__init__(f"{shard}:{lineno}: expected {N_FEATURES + 1} fields")
        self.shard = shard
        self.lineno = lineno


def shard_lines(shard_id):
    """The text of one shard (stands in for reading shard-NNN.csv from disk)."""
    g = torch.Generator().manual_seed(shard_id)
    lines = []
    for i in range(256):
        row = torch.randn(N_FEATURES + 1, generator=g).tolist()
        if shard_id == 13 and i == 97:
            row = row[:3]  # a truncated line, as a partial write leaves it
        lines.append(",".join(f"{v:.5f}" for v in row))
    return lines


def parse_shard(shard_id):
    name = f"shard-{shard_id:03d}.csv"
    rows = []
    for lineno, line in enumerate(shard_lines(shard_id), start=1):
        fields = line.split(",")
        if len(fields) != N_FEATURES + 1:
            raise RecordError(name, lineno)  # HANG: raise-record
        rows.append([float(f) for f in fields])
    return torch.tensor(rows)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--shards-per-epoch", type=int, default=8)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(N_FEATURES, 32), nn.ReLU(), nn.Linear(32, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    loss_fn = nn.MSELoss()

    step = 0
    with mp.Pool(args.workers) as pool:
        for epoch in range(args.epochs):
            first = epoch * args.shards_per_epoch
            shard_ids = list(range(first, first + args.shards_per_epoch))
            print(f"epoch {epoch}: parsing shards {shard_ids[0]}..{shard_ids[-1]}", flush=True)
            tables = pool.map(parse_shard, shard_ids)  # HANG: pool-map
            data = torch.cat(tables)
            x, y = data[:, :N_FEATURES], data[:, N_FEATURES:]
            for i in range(0, len(data), args.batch_size):
                xb, yb = x[i : i + args.batch_size], y[i : i + args.batch_size]
                loss = loss_fn(model(xb), yb)
                opt.zero_grad()
                loss.backward()
                opt.step()
                print(f"epoch {epoch} step {step} loss {loss.item():.4f}", flush=True)
                step += 1
    print("training done", flush=True)


if __name__ == "__main__":
    main()
