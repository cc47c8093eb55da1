"""MNIST-sized MLP with per-epoch checkpoints guarded by a file lock, and an uploader process.

Written from https://github.com/ceph/ceph-qa-suite/pull/583 ("flock must --close": a process
started while the lock is held inherits the lock's file descriptor, and the lock stays held
for as long as that process lives). Locks taken with flock() belong to the open file
description, not to the process: the uploader is forked (multiprocessing, fork start method)
inside the first checkpoint's critical section, so it holds a copy of the locked descriptor.
The trainer "releases" by closing its own descriptor, which does not release a lock another
process still refers to. At the next checkpoint the trainer blocks in flock() for ever, while
the uploader waits on its queue for a checkpoint that can only come after that lock.
"""

import argparse
import fcntl
import multiprocessing as mp
import os
import shutil

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


class CheckpointLock:
    """Exclusive lock on `<dir>/.lock`, so that evaluation jobs never read a half-written file."""

    def __init__(self, directory: str):
        self.path = os.path.join(directory, ".lock")
        self.fh = None

    def __enter__(self):
        self.fh = open(self.path, "a+")
        fcntl.flock(self.fh.fileno(), fcntl.LOCK_EX)  # HANG: lock
        return self

    def __exit__(self, *exc):
        self.fh.close()  # closing the descriptor drops the lock
        self.fh = None


def upload_worker(queue: mp.Queue, remote: str) -> None:
    """Copies each finished checkpoint to 'remote storage' (a local folder here)."""
    os.makedirs(remote, exist_ok=True)
    while True:
        path = queue.get()
        if path is None:
            return
        shutil.copy(path, remote)
        print(f"  [uploader] copied {os.path.basename(path)}", flush=True)


class CheckpointManager:
    def __init__(self, directory: str, remote: str):
        self.dir, self.remote = directory, remote
        os.makedirs(directory, exist_ok=True)
        self.lock = CheckpointLock(directory)
        self.queue = mp.Queue()
        self.uploader = None

    def save(self, epoch: int, model: nn.Module) -> None:
        path = os.path.join(self.dir, f"model_{epoch:02d}.pt")
        with self.lock:
            torch.save(model.state_dict(), path + ".tmp")
            os.replace(path + ".tmp", path)
            if self.uploader is None:  # start the uploader lazily, on the first checkpoint
                self.uploader = mp.Process(target=upload_worker, args=(self.queue, self.remote),
                                           daemon=True)
                self.uploader.start()  # HANG: fork-under-lock
        self.queue.put(path)
        print(f"  saved {path}", flush=True)

    def close(self) -> None:
        self.queue.put(None)
        if self.uploader is not None:
            self.uploader.join()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--ckpt", default="ckpt_mlp")
    parser.add_argument("--remote", default="remote_store")
    args = parser.parse_args()

    g = torch.Generator().manual_seed(0)
    x = torch.randn(4096, 784, generator=g)
    y = (x[:, :10].argmax(1) + (x[:, 10] > 0).long()) % 10
    loader = DataLoader(TensorDataset(x, y), batch_size=128, shuffle=True)
    model = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    ckpt = CheckpointManager(args.ckpt, args.remote)
    for epoch in range(1, args.epochs + 1):
        correct = 0
        for xb, yb in loader:
            logits = model(xb)
            loss = nn.functional.cross_entropy(logits, yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
            correct += (logits.argmax(1) == yb).sum().item()
        print(f"epoch {epoch}: loss {loss.item():.3f} acc {correct / len(x):.3f}", flush=True)
        ckpt.save(epoch, model)
    ckpt.close()
    print("done", flush=True)


if __name__ == "__main__":
    main()
