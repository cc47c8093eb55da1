"""Click-through-rate model trained from log files with an IterableDataset, DDP started with
torch.multiprocessing.spawn (gloo).

Written from https://github.com/pytorch/pytorch/issues/33148 (uneven DDP inputs, from the
forum thread "best practice for uneven dataset sizes"): the files are dealt to the ranks
round-robin, and the files hold different numbers of records, so rank 0 runs out first. It
waits in the barrier at the end of training while rank 1 waits in DDP's gradient all-reduce
inside backward() for a partner that no longer comes.
"""

import os
import socket
import zlib

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, IterableDataset

LOG_FILES = {"day-01.log": 160, "day-02.log": 224, "day-03.log": 96, "day-04.log": 128}


class ClickLogs(IterableDataset):
    def __init__(self, rank: int, world_size: int) -> None:
        self.files = sorted(LOG_FILES)[rank::world_size]  # HANG: deal-files

    def __iter__(self):
        for name in self.files:
            g = torch.Generator().manual_seed(zlib.crc32(name.encode()))
            for _ in range(LOG_FILES[name]):
                features = torch.randn(24, generator=g)
                yield features, (features[:4].sum() > 0).float()


class ClickModel(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(24, 48), nn.ReLU(), nn.Linear(48, 1))

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        return self.mlp(features).squeeze(1)


def train(rank: int, world_size: int, port: int) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world_size)
    torch.manual_seed(0)
    model = DDP(ClickModel())
    optimizer = torch.optim.Adagrad(model.parameters(), lr=0.05)
    loader = DataLoader(ClickLogs(rank, world_size), batch_size=32)
    for step, (features, clicked) in enumerate(loader):
        loss = nn.functional.binary_cross_entropy_with_logits(model(features), clicked)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(f"rank {rank} step {step} loss {loss.item():.4f}", flush=True)
    print(f"rank {rank} finished its files", flush=True)
    dist.barrier()  # HANG: end-of-training
    if rank == 0:
        torch.save(model.module.state_dict(), "ctr_model.pt")
    dist.destroy_process_group()


if __name__ == "__main__":
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    world_size = int(os.environ.get("WORLD_SIZE", "2"))
    mp.spawn(train, args=(world_size, port), nprocs=world_size)
