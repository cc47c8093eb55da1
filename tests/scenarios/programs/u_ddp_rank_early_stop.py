"""Tabular regression with DDP under torchrun and an early-stopping rule.

Written from https://github.com/Lightning-AI/pytorch-lightning/issues/379 (early stopping with
DDP stalls when the stop condition is met on some ranks only): every rank watches the loss on
its own validation shard and stops on its own. Rank 1 stops first and returns; rank 0 goes
on into the next backward(), whose gradient all-reduce waits for a rank that has exited.
"""

import argparse

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


class EarlyStopping:
    def __init__(self, patience: int) -> None:
        self.patience, self.best, self.bad_epochs = patience, float("inf"), 0

    def should_stop(self, val_loss: float) -> bool:
        if val_loss < self.best - 1e-4:
            self.best, self.bad_epochs = val_loss, 0
        else:
            self.bad_epochs += 1
        return self.bad_epochs >= self.patience


def make_data(seed: int, rows: int, drift: float = 0.0) -> TensorDataset:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(rows, 12, generator=g)
    weights = torch.linspace(-1, 1, 12) * (1.0 - drift)
    return TensorDataset(x, x @ weights + 0.1 * torch.randn(rows, generator=g))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=50)
    parser.add_argument("--patience", type=int, default=2)
    args = parser.parse_args()
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    train = make_data(0, 512)
    # each rank validates on the month it holds; rank 1's month has drifted
    val_x, val_y = make_data(100 + rank, 64, drift=1.5 * rank).tensors
    loader = DataLoader(train, batch_size=32, sampler=DistributedSampler(train))
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(12, 32), nn.Tanh(), nn.Linear(32, 1)))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    stopper = EarlyStopping(args.patience)
    for epoch in range(args.epochs):
        loader.sampler.set_epoch(epoch)
        for x, y in loader:
            loss = nn.functional.mse_loss(model(x).squeeze(1), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        with torch.no_grad():
            val_loss = nn.functional.mse_loss(model.module(val_x).squeeze(1), val_y).item()
        print(f"rank {rank} epoch {epoch} train {loss.item():.4f} val {val_loss:.4f}", flush=True)
        if stopper.should_stop(val_loss):
            print(f"rank {rank}: early stopping at epoch {epoch}", flush=True)
            break  # HANG: early-stop
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
