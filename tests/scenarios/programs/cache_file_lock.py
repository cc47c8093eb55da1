"""Training first builds a feature cache on local disk, under an exclusive file lock so that
concurrent jobs do not build it twice. A prefetch helper started earlier took the lock and is
still retrying its own download; the trainer waits for the lock without a timeout."""

import fcntl
import multiprocessing
import os
import time

import torch
from torch import nn


def prefetch(lock_path: str, ready) -> None:
    with open(lock_path, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        ready.set()
        while True:
            time.sleep(5)  # waits for an upstream mirror, then retries


def build_cache(lock_path: str) -> torch.Tensor:
    with open(lock_path, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)  # HANG: lock
        return torch.randn(256, 17)


def main() -> None:
    lock_path = os.path.abspath("features.lock")
    ready = multiprocessing.Event()
    helper = multiprocessing.Process(target=prefetch, args=(lock_path, ready), daemon=True)
    helper.start()
    ready.wait()
    print("building the feature cache", flush=True)
    features = build_cache(lock_path)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for step in range(0, 256, 32):
        batch = features[step:step + 32]
        loss = nn.functional.mse_loss(model(batch[:, :16]), batch[:, 16:])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(f"step {step} loss {loss.item():.4f}", flush=True)


if __name__ == "__main__":
    main()
