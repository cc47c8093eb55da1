"""Healthy control: two-rank DDP training (torchrun, gloo on CPU) of a defect classifier that
reads its pre-tokenized feature shards from a node-local cache guarded by an exclusive flock()
and reduces its metrics over a dedicated gloo group.

Written from the fixes discussed in https://github.com/Lightning-AI/pytorch-lightning/pull/19917
(log the same keys on every rank) and https://github.com/tox-dev/filelock/issues/315 (never
take the same lock file twice in one process): rank 0 builds the cache while rank 1 waits
in a barrier (about 3 s), eviction runs inside the lock holder without re-locking, and
every rank reduces one fixed vector of metric sums (the crack recall from hit and count sums,
zero where a batch has no crack). After each epoch rank 0 writes a checkpoint to slow storage
while rank 1 waits in a barrier: about 2.5 s without output. Exits 0 after about 15-25 s.
"""

import fcntl
import glob
import os
import time

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

CACHE = "/tmp/r10b_healthy_defect_cache"
CRACK, N_SHARDS, BUDGET = 3, 8, 6


class CacheLock:
    def __init__(self, cache_dir: str) -> None:
        self.path = os.path.join(cache_dir, ".lock")

    def __enter__(self):
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        fcntl.flock(self.fd, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc) -> None:
        fcntl.flock(self.fd, fcntl.LOCK_UN)
        os.close(self.fd)


def _evict_locked(cache_dir: str) -> None:
    """Caller holds the CacheLock."""
    shards = sorted(glob.glob(os.path.join(cache_dir, "shard-*.pt")))
    for path in shards[:-BUDGET]:
        os.remove(path)


def build_cache(cache_dir: str) -> None:
    with CacheLock(cache_dir):
        for idx in range(N_SHARDS):
            time.sleep(0.4)  # fetch the raw inspection images of this shard
            g = torch.Generator().manual_seed(idx)
            y = torch.multinomial(torch.tensor([0.7, 0.17, 0.12, 0.01]), 320, True, generator=g)
            x = torch.randn(320, 24, generator=g) + 0.8 * nn.functional.one_hot(y, 24).float()
            torch.save((x, y), os.path.join(cache_dir, f"shard-{idx:03d}.pt"))
            _evict_locked(cache_dir)
            print(f"[rank 0] cached shard {idx}", flush=True)


def main() -> None:
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    metrics_group = dist.new_group(backend="gloo")
    os.makedirs(CACHE, exist_ok=True)
    if rank == 0:
        build_cache(CACHE)
    else:
        print("[rank 1] waiting for rank 0 to build the feature cache", flush=True)
    dist.barrier()
    shards = sorted(glob.glob(os.path.join(CACHE, "shard-*.pt")))[rank::world]
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(24, 64), nn.ReLU(), nn.Linear(64, 4)))
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    step = 0
    for epoch in range(3):
        for path in shards:
            x_all, y_all = torch.load(path)
            for start in range(0, len(y_all), 32):
                x, y = x_all[start:start + 32], y_all[start:start + 32]
                logits = model(x)
                loss = nn.functional.cross_entropy(logits, y)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                pred, crack = logits.argmax(1), y == CRACK
                sums = torch.tensor([loss.item(), (pred == y).float().mean().item(),
                                     (pred[crack] == CRACK).sum().item(), crack.sum().item()],
                                    dtype=torch.float64)
                dist.all_reduce(sums, group=metrics_group)
                recall = f"{sums[2] / sums[3]:.2f}" if sums[3] > 0 else "n/a"
                if rank == 0:
                    print(f"epoch {epoch} step {step} loss {sums[0] / world:.3f} "
                          f"acc {sums[1] / world:.3f} crack recall {recall}", flush=True)
                step += 1
        if rank == 0:
            with CacheLock(CACHE):  # the shared filesystem is slow: about 2.5 s, no output
                time.sleep(2.5)
                torch.save(model.module.state_dict(), os.path.join(CACHE, f"epoch-{epoch}.ckpt"))
        dist.barrier()
        if rank == 0:
            print(f"epoch {epoch} checkpoint written", flush=True)
    if rank == 0:
        print("training finished", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
