"""Train a small CNN on image shards stored as .pt files. The dataset keeps an in-memory shard
cache shared by all readers and guarded by a `threading.Lock`; to hide the cold-start latency
it starts a background "cache warmer" thread that preloads the shards in order, holding the
cache lock for the whole warm-up so that readers never see a half-filled cache. The DataLoader
uses forked workers (`multiprocessing_context="fork"`, chosen for fast start-up).

Written from https://github.com/pytorch/pytorch/issues/24927 ("When use pin_memory, dataloader
can get stuck", where a background thread in the main process held a lock while the loader
forked, and the maintainer answers "`fork` does inherit lock states. That could indeed be
problematic..."). The workers are forked while the warmer is in the middle of its pass: every
child gets a copy of the lock in the *locked* state but not the thread that would release it,
so each worker's first `__getitem__` blocks on the lock for ever. The parent's warmer finishes
normally and the main thread waits on the loader's result queue; the workers are alive, so the
loader's liveness check never fires.
"""

import argparse
import os
import tempfile
import threading
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

PER_SHARD = 64


class ShardedImages(Dataset):
    def __init__(self, root: str, shards: int) -> None:
        self.paths = [os.path.join(root, f"shard-{i:03d}.pt") for i in range(shards)]
        self._cache: dict = {}
        self._lock = threading.Lock()
        self._warming = threading.Event()
        self._warmer = threading.Thread(target=self._warm, name="cache-warmer", daemon=True)
        self._warmer.start()
        self._warming.wait()  # readers come after the warmer has the cache to itself

    def _warm(self) -> None:
        with self._lock:  # HANG: warmer-holds-lock
            self._warming.set()
            for i, path in enumerate(self.paths):
                shard = torch.load(path)
                # normalise once per shard, so that workers only slice
                shard["images"] = (shard["images"].float() / 255 - 0.5) / 0.25
                self._cache[i] = shard
                time.sleep(0.02)  # pace the reads: the shared disk also serves the first batches

    def _shard(self, i: int) -> dict:
        with self._lock:  # HANG: worker-lock
            if i not in self._cache:
                shard = torch.load(self.paths[i])
                shard["images"] = (shard["images"].float() / 255 - 0.5) / 0.25
                self._cache[i] = shard
            return self._cache[i]

    def __len__(self) -> int:
        return len(self.paths) * PER_SHARD

    def __getitem__(self, idx: int):
        shard = self._shard(idx // PER_SHARD)
        j = idx % PER_SHARD
        return shard["images"][j], shard["labels"][j]


def write_shards(root: str, shards: int) -> None:
    g = torch.Generator().manual_seed(0)
    for i in range(shards):
        images = torch.randint(0, 256, (PER_SHARD, 3, 64, 64), generator=g, dtype=torch.uint8)
        labels = (images[:, 0].float().mean((1, 2)) > 127.5).long()
        torch.save({"images": images, "labels": labels}, os.path.join(root, f"shard-{i:03d}.pt"))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--shards", type=int, default=96)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    root = tempfile.mkdtemp(prefix="imgshards-")
    write_shards(root, args.shards)
    print(f"wrote {args.shards} shards to {root}", flush=True)
    dataset = ShardedImages(root, args.shards)
    loader = DataLoader(dataset, batch_size=32, shuffle=True, num_workers=args.workers,
                        multiprocessing_context="fork", persistent_workers=True)
    model = nn.Sequential(nn.Conv2d(3, 8, 3, stride=2), nn.ReLU(), nn.AdaptiveAvgPool2d(4),
                          nn.Flatten(), nn.Linear(8 * 16, 2))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    for epoch in range(args.epochs):
        total = 0.0
        for step, (xb, yb) in enumerate(loader):  # HANG: next-batch
            loss = nn.functional.cross_entropy(model(xb), yb)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += loss.item()
            if step % 50 == 0:
                print(f"epoch {epoch} step {step} loss {loss.item():.4f}", flush=True)
        print(f"epoch {epoch} mean loss {total / (step + 1):.4f}", flush=True)


if __name__ == "__main__":
    main()
