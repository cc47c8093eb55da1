"""Healthy control: behaviour cloning of a boat heading controller from logged tracks stored as
JSON lines, read by two DataLoader workers, with loss-based (hard-example) batch sampling.

Written from the fix asked for in https://github.com/ScrollPrize/villa/issues/1482 (bound the
replacement walk of unusable samples and remember what it visited): a record whose compass fix
is missing is replaced by a deterministic neighbour, but the walk keeps a visited set and a
bound, and falls back to a known-good record. The records are shallow JSON read with the
default recursion limit; the hard-example sampler uses the loss table as it stands when asked
for indices (it never waits for the trainer, so pre-fetching is harmless); checkpoints go, one
at a time, to an uploader thread (2 s per file) stopped with a sentinel and joined. Exits 0.
"""

import json
import math
import os
import queue
import random
import tempfile
import threading
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset, Sampler

RECORDS, MAX_HOPS, HIDDEN, BATCH = 4096, 16, 128, 64


def export_tracks(path: str) -> None:
    rng = random.Random(0)
    with open(path, "w") as f:
        for _ in range(RECORDS):
            bearing = rng.uniform(-math.pi, math.pi)
            fix = None if rng.random() < 0.6 else bearing + rng.gauss(0.0, 0.1)
            obs = [math.cos(bearing), math.sin(bearing), rng.gauss(0, 1), rng.gauss(0, 1)]
            f.write(json.dumps({"obs": obs, "heading": fix}) + "\n")


class Tracks(Dataset):
    def __init__(self, path: str) -> None:
        with open(path) as f:
            self.rows = f.read().splitlines()
        known = (i for i, r in enumerate(self.rows) if json.loads(r)["heading"] is not None)
        self.fallback = next(known)

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, index: int):
        visited = set()
        while index not in visited and len(visited) < MAX_HOPS:
            visited.add(index)
            record = json.loads(self.rows[index])
            if record["heading"] is not None:
                break
            index = random.Random(17 + index * 7919).randrange(len(self.rows))
        else:
            index, record = self.fallback, json.loads(self.rows[self.fallback])
        h = record["heading"]
        return torch.tensor(record["obs"]), torch.tensor([math.cos(h), math.sin(h)]), index


class HardExampleBatchSampler(Sampler[list[int]]):
    def __init__(self, losses: torch.Tensor) -> None:
        self.losses = losses

    def __len__(self) -> int:
        return len(self.losses) // BATCH

    def __iter__(self):
        for _ in range(len(self)):
            hard = torch.topk(self.losses, BATCH // 4).indices  # whatever is known right now
            rest = torch.randint(len(self.losses), (BATCH - len(hard),))
            yield torch.cat([hard, rest]).tolist()


def uploader(jobs: queue.Queue) -> None:
    while (path := jobs.get()) is not None:
        time.sleep(2.0)  # the object store is slow
        os.replace(path, path + ".uploaded")
        jobs.task_done()


def main() -> None:
    torch.manual_seed(0)
    torch.set_num_threads(1)
    run_dir = tempfile.mkdtemp(prefix="tracks_")
    path = os.path.join(run_dir, "tracks.jsonl")
    export_tracks(path)
    losses = torch.full((RECORDS,), 10.0)
    data = Tracks(path)
    loader = DataLoader(data, batch_sampler=HardExampleBatchSampler(losses), num_workers=2)
    body = nn.Sequential(
        nn.Linear(4, HIDDEN), nn.Tanh(), nn.Linear(HIDDEN, HIDDEN), nn.Tanh(), nn.Linear(HIDDEN, 2)
    )
    opt = torch.optim.Adam(body.parameters(), lr=3e-3)
    jobs: queue.Queue = queue.Queue()
    upload = threading.Thread(target=uploader, args=(jobs,), name="ckpt-upload")
    upload.start()
    for epoch in range(8):
        for step, (obs, target, idx) in enumerate(loader):
            per_sample = (body(obs) - target).pow(2).sum(1)
            loss = per_sample.mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses[idx] = per_sample.detach()
            print(f"epoch {epoch} step {step} loss {loss.item():.4f}", flush=True)
        if epoch % 2 == 1:
            jobs.join()  # one upload in flight at most: wait (silently) for the previous one
            ckpt = os.path.join(run_dir, f"epoch{epoch}.pt")
            torch.save(body.state_dict(), ckpt)
            jobs.put(ckpt)
    jobs.put(None)
    upload.join()  # waits (silently) for the last upload, about 2 s
    print("done", flush=True)


if __name__ == "__main__":
    main()
