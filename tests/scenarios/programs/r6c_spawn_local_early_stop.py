"""Sensor-drift regressor, DDP with mp.spawn, with an early-stopping rule per rank.

Written from https://github.com/webdataset/webdataset/issues/446: training breaks out of the
epoch loop when the loss has not improved for a few epochs, but each rank judges that on its
OWN loss. Rank 1's shard (a stale sensor) plateaus first; rank 1 leaves the loop
and waits in the barrier before the final save, while rank 0, still improving, trains on and
waits in DDP's gradient all-reduce of its next batch.
"""

import argparse
import os
import socket

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset


def sensor_shard(rank: int, n: int = 512) -> TensorDataset:
    """Each rank reads the recordings of its own sensor; sensor 1 went stale (it repeats its
    last reading), so its inputs carry no information about the targets."""
    g = torch.Generator().manual_seed(100 + rank)
    x = torch.randn(n, 8, generator=g)
    y = torch.sin(x[:, :1] * 2) + 0.5 * x[:, 1:2]
    if rank == 1:
        x = x[:1].expand(n, 8).clone()
    return TensorDataset(x, y)


class EarlyStopping:
    def __init__(self, patience: int, min_delta: float) -> None:
        self.patience, self.min_delta = patience, min_delta
        self.best, self.bad_epochs = float("inf"), 0

    def step(self, loss: float) -> bool:
        if loss < self.best - self.min_delta:
            self.best, self.bad_epochs = loss, 0
        else:
            self.bad_epochs += 1
        return self.bad_epochs >= self.patience


def worker(rank: int, world_size: int, port: int, args) -> None:
    os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = "127.0.0.1", str(port)
    dist.init_process_group("gloo", rank=rank, world_size=world_size)
    torch.manual_seed(0)
    loader = DataLoader(sensor_shard(rank), batch_size=32, shuffle=True)
    model = DDP(nn.Sequential(nn.Linear(8, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh(),
                              nn.Linear(64, 1)))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    stopper = EarlyStopping(patience=args.patience, min_delta=1e-3)
    for epoch in range(args.max_epochs):
        total, batches = 0.0, 0
        for x, y in loader:
            loss = nn.functional.mse_loss(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total, batches = total + loss.item(), batches + 1
        epoch_loss = total / batches
        print(f"[rank {rank}] epoch {epoch} loss {epoch_loss:.4f}", flush=True)
        if stopper.step(epoch_loss):  # HANG: local-decision
            print(f"[rank {rank}] no improvement for {args.patience} epochs, stopping", flush=True)
            break  # HANG: early-stop
    dist.barrier()  # everyone done before rank 0 writes the model
    if rank == 0:
        torch.save(model.module.state_dict(), "sensor_model.pt")
    dist.destroy_process_group()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--max-epochs", type=int, default=200)
    parser.add_argument("--patience", type=int, default=3)
    args = parser.parse_args()
    mp.spawn(worker, args=(2, free_port(), args), nprocs=2, join=True)
