"""Train a small classifier on images streamed from a blob store, with 4 DataLoader workers.

Run it and it trains for a few dozen steps, then freezes: no error, no log line, CPU idle.
`python examples/diagnose_stuck_training.py` runs it and lets hangdoctor say why.
"""

from __future__ import annotations

import argparse

import torch
from blob_store import start_blob_store
from data import RemoteImageDataset
from torch import nn
from torch.utils.data import DataLoader


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--stall-at", type=int, default=300, help="sample the store never sends")
    args = parser.parse_args()

    torch.manual_seed(0)
    base_url = start_blob_store(stall_at=args.stall_at)
    loader = DataLoader(RemoteImageDataset(base_url, length=2048), batch_size=8,
                        shuffle=False, num_workers=args.workers)
    model = nn.Sequential(nn.Flatten(), nn.Linear(3 * 16 * 16, 64), nn.ReLU(), nn.Linear(64, 10))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    for step, (images, labels) in enumerate(loader):
        loss = nn.functional.cross_entropy(model(images), labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(f"step {step:4d}  loss {loss.item():.4f}", flush=True)


if __name__ == "__main__":
    main()
