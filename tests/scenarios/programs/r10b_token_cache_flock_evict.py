"""Byte-level language-model fine-tune that streams pre-tokenized shards from a node-local
cache. Several jobs on the node share the cache directory, so every cache operation holds an
exclusive flock() on `<cache>/.lock`: a shard is tokenized and written once, and when the
cache grows past its budget the oldest shards are evicted.

Written from https://github.com/tox-dev/filelock/issues/315 ("Deadlock when a process tries to
open and lock on the same file twice"): flock() locks belong to the open file description, so
a second open() of the lock file in the same process is a different owner and waits for the
first one. The fifth shard pushes the cache over budget and `get_shard` calls
`evict_old_shards` while it still holds the lock; eviction opens the lock file again and its
flock(LOCK_EX) waits for ever for a lock that its own caller holds.
"""

import fcntl
import glob
import os
import random
import tempfile

import torch
from torch import nn

WORDS = ("the model reads every shard once and the loss goes down while the cache keeps "
         "growing on the local disk of the node").split()
CACHE_BUDGET = 450 * 1024  # room for four and a half shards


class CacheLock:
    """Inter-process lock on the cache directory (the pattern of filelock.FileLock)."""

    def __init__(self, cache_dir: str) -> None:
        self.path = os.path.join(cache_dir, ".lock")

    def __enter__(self):
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        fcntl.flock(self.fd, fcntl.LOCK_EX)  # HANG: second-flock
        return self

    def __exit__(self, *exc) -> None:
        fcntl.flock(self.fd, fcntl.LOCK_UN)
        os.close(self.fd)


def evict_old_shards(cache_dir: str) -> None:
    with CacheLock(cache_dir):  # HANG: nested-lock
        shards = sorted(glob.glob(os.path.join(cache_dir, "shard-*.pt")), key=os.path.getmtime)
        while shards and sum(map(os.path.getsize, shards)) > CACHE_BUDGET:
            os.remove(shards.pop(0))


def get_shard(cache_dir: str, idx: int) -> torch.Tensor:
    path = os.path.join(cache_dir, f"shard-{idx:05d}.pt")
    with CacheLock(cache_dir):
        if not os.path.exists(path):
            rng = random.Random(idx)
            text = " ".join(rng.choice(WORDS) for _ in range(18000))
            ids = torch.frombuffer(bytearray(text.encode()), dtype=torch.uint8).long()
            torch.save(ids[: 12 * 1024].clone(), path + ".tmp")
            os.replace(path + ".tmp", path)
            used = sum(map(os.path.getsize, glob.glob(os.path.join(cache_dir, "shard-*.pt"))))
            if used > CACHE_BUDGET:
                evict_old_shards(cache_dir)  # HANG: evict-under-lock
    return torch.load(path)


def main() -> None:
    cache_dir = tempfile.mkdtemp(prefix="r10b_tokcache_")
    torch.manual_seed(0)
    model = nn.Sequential(nn.Embedding(256, 64), nn.Linear(64, 256))
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    step, context = 0, 128
    for shard_idx in range(40):
        ids = get_shard(cache_dir, shard_idx)
        print(f"shard {shard_idx}: {ids.numel()} tokens from {cache_dir}", flush=True)
        for start in range(0, ids.numel() - context - 1, 2048):
            x = ids[start:start + context]
            y = ids[start + 1:start + context + 1]
            loss = nn.functional.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            print(f"step {step} loss {loss.item():.3f}", flush=True)
            step += 1
    torch.save(model.state_dict(), os.path.join(cache_dir, "byte_lm.pt"))


if __name__ == "__main__":
    main()
