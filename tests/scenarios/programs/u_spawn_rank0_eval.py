"""Image-classifier training launched with torch.multiprocessing.spawn (DDP, gloo).

Written from https://prod.velog.io/@scyonggg/dist.getrank-0-후-dist.barrier에서-stall되는-현상
(and the thread it cites, discuss.pytorch.org/t/torch-distributed-barrier-hangs-in-ddp/114522):
validation runs on rank 0 only, through the DDP-wrapped model. The model has BatchNorm
buffers, so DDP's forward broadcasts them to the other ranks first; rank 1 meanwhile waits in
the barrier after the epoch, and the two never meet.
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
from torch.utils.data.distributed import DistributedSampler


class SmallNet(nn.Module):
    def __init__(self, classes: int = 10) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(64, 128), nn.BatchNorm1d(128), nn.ReLU())
        self.head = nn.Linear(128, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.body(x))


def validate(model: DDP, loader: DataLoader) -> float:
    model.eval()
    correct = 0
    with torch.no_grad():
        for x, y in loader:
            correct += (model(x).argmax(1) == y).sum().item()  # HANG: validate
    model.train()
    return correct / len(loader.dataset)


def worker(rank: int, world_size: int, port: str, epochs: int) -> None:
    os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = "127.0.0.1", port
    dist.init_process_group("gloo", rank=rank, world_size=world_size)
    g = torch.Generator().manual_seed(0)
    train = TensorDataset(torch.randn(2048, 64, generator=g),
                          torch.randint(0, 10, (2048,), generator=g))
    val = TensorDataset(torch.randn(256, 64, generator=g),
                        torch.randint(0, 10, (256,), generator=g))
    sampler = DistributedSampler(train)
    loader = DataLoader(train, batch_size=64, sampler=sampler)
    model = DDP(SmallNet())
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        for x, y in loader:
            loss = nn.functional.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        print(f"[rank {rank}] epoch {epoch} loss {loss.item():.4f}", flush=True)
        if rank == 0:
            print(f"epoch {epoch} val acc {validate(model, DataLoader(val, batch_size=64)):.3f}")
        dist.barrier()
    dist.destroy_process_group()


def free_port() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return str(s.getsockname()[1])


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--world-size", type=int, default=2)
    args = parser.parse_args()
    mp.spawn(worker, args=(args.world_size, free_port(), args.epochs), nprocs=args.world_size)
