"""Healthy control: DDP training started with torch.multiprocessing.spawn, in the shape of
the PyTorch DDP tutorial series (https://github.com/pytorch/tutorials/pull/2049): a Trainer
class, a free port chosen by the parent, checkpoints written by rank 0 only through
`model.module` and with no collective inside, and every rank through the same collectives.
"""

import io
import os
import socket

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


class Trainer:
    def __init__(self, model: nn.Module, loader: DataLoader, rank: int, save_every: int) -> None:
        self.rank, self.loader, self.save_every = rank, loader, save_every
        self.model = DDP(model)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=1e-2)

    def _run_epoch(self, epoch: int) -> float:
        self.loader.sampler.set_epoch(epoch)
        for source, targets in self.loader:
            loss = nn.functional.mse_loss(self.model(source), targets)
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
        return loss.item()

    def train(self, epochs: int) -> None:
        for epoch in range(epochs):
            loss = self._run_epoch(epoch)
            print(f"[rank {self.rank}] epoch {epoch} loss {loss:.4f}", flush=True)
            if self.rank == 0 and epoch % self.save_every == 0:
                torch.save(self.model.module.state_dict(), io.BytesIO())
                print(f"epoch {epoch}: checkpoint saved", flush=True)


def main(rank: int, world_size: int, port: int, epochs: int) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world_size)
    g = torch.Generator().manual_seed(0)
    data = TensorDataset(torch.randn(2048, 20, generator=g), torch.randn(2048, 1, generator=g))
    loader = DataLoader(data, batch_size=32, sampler=DistributedSampler(data))
    torch.manual_seed(0)
    Trainer(nn.Linear(20, 1), loader, rank, save_every=2).train(epochs)
    dist.destroy_process_group()


if __name__ == "__main__":
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    world_size = 2
    mp.spawn(main, args=(world_size, port, 5), nprocs=world_size)
