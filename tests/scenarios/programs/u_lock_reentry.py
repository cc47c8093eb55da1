"""Single-process training with a small checkpoint manager that keeps the last N
checkpoints, guarded by a lock so that an async-save thread can share it.

Written from https://github.com/apache/texera/issues/4794 (a method that holds a
non-reentrant threading.Lock calls a property that takes the same lock: the call never
returns) and box/ClusterRunner#48 (a recursive logging call re-acquires the handler's
lock): `save()` holds the lock and calls `_prune()`, which lists the checkpoints through
`checkpoints()`, which takes the lock again. The main thread waits for itself.
"""

import argparse
import os
import tempfile
import threading

import torch
from torch import nn


class CheckpointManager:
    def __init__(self, directory: str, keep: int) -> None:
        self.directory, self.keep = directory, keep
        self._lock = threading.Lock()

    def checkpoints(self) -> list[str]:
        with self._lock:  # HANG: reacquire
            names = [n for n in os.listdir(self.directory) if n.endswith(".pt")]
        return sorted(names, key=lambda n: int(n.split("-")[1].split(".")[0]))

    def _prune(self) -> None:
        for name in self.checkpoints()[:-self.keep]:
            os.remove(os.path.join(self.directory, name))

    def save(self, state: dict, step: int) -> None:
        with self._lock:
            torch.save(state, os.path.join(self.directory, f"ckpt-{step}.pt"))
            if len(os.listdir(self.directory)) > self.keep:
                self._prune()  # HANG: prune


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--save-every", type=int, default=10)
    parser.add_argument("--keep", type=int, default=2)
    args = parser.parse_args()
    manager = CheckpointManager(tempfile.mkdtemp(prefix="ckpt-"), keep=args.keep)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(0)
    for step in range(1, 201):
        x = torch.randn(32, 16, generator=g)
        loss = nn.functional.mse_loss(model(x), x.sum(1, keepdim=True))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(f"step {step} loss {loss.item():.4f}", flush=True)
        if step % args.save_every == 0:
            manager.save({"model": model.state_dict(), "step": step}, step)


if __name__ == "__main__":
    main()
