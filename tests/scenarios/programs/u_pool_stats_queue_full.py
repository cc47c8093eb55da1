"""Feature extraction for a tabular model: a process pool normalises the raw shards and reports
per-shard statistics on a bounded queue that the main process reads once extraction is done;
a small regressor is then trained on the features.

Written from https://sopython.com/canon/82/programs-using-multiprocessing-hang-deadlock-and-never-complete/
("Programs using multiprocessing hang (deadlock) and never complete"): a child blocks in
Queue.put() until someone calls get(), while the parent is blocked waiting for that child to
finish before it reads the queue. Here the parent waits in Pool.map() and the pool tasks block on
a queue bounded to one entry that is only drained after map() returns.
"""

import multiprocessing as mp

import torch
from torch import nn

stats_queue = None


def init_worker(queue) -> None:
    global stats_queue
    stats_queue = queue


def extract_features(shard: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(shard)
    raw = torch.randn(256, 24, generator=g) * (1 + shard % 3)
    mean, std = raw.mean(0), raw.std(0)
    features = (raw - mean) / std
    stats_queue.put({"shard": shard, "mean": mean.tolist(), "std": std.tolist()})  # HANG: put
    return features


def main() -> None:
    torch.manual_seed(0)
    queue = mp.Queue(maxsize=1)
    with mp.Pool(processes=2, initializer=init_worker, initargs=(queue,)) as pool:
        shards = pool.map(extract_features, range(32))  # HANG: map
    stats = [queue.get() for _ in range(32)]
    print(f"collected stats for {len(stats)} shards", flush=True)
    features = torch.cat(shards)
    target = features[:, :6].sum(1, keepdim=True)
    model = nn.Sequential(nn.Linear(24, 64), nn.ReLU(), nn.Linear(64, 1))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    for step in range(50):
        loss = nn.functional.mse_loss(model(features), target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % 10 == 0:
            print(f"step {step} loss {loss.item():.4f}", flush=True)


if __name__ == "__main__":
    main()
