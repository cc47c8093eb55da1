"""Recommendation-model training started with torch.multiprocessing.spawn (DDP, gloo), each
rank streaming its checkpoint to an object-store gateway over a plain socket.

Written from https://github.com/facebookresearch/PyTorch-BigGraph/issues/160 (a trainer stuck
writing its checkpoint to network storage): the gateway accepts the connection but stops
reading, so once the socket buffers are full rank 1 blocks in `sendall()` for ever, while rank
0 has gone on and waits in DDP's gradient all-reduce inside backward().
"""

import io
import os
import socket

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

CHECKPOINT_EVERY = 6


class TwoTower(nn.Module):
    def __init__(self, dim: int = 1024) -> None:
        super().__init__()
        self.user = nn.Linear(dim, dim)
        self.item = nn.Linear(dim, dim)

    def forward(self, users: torch.Tensor, items: torch.Tensor) -> torch.Tensor:
        return (self.user(users) * self.item(items)).sum(1)


def upload_checkpoint(gateway: tuple[str, int], state: dict) -> None:
    buffer = io.BytesIO()
    torch.save(state, buffer)
    with socket.create_connection(gateway) as connection:
        connection.sendall(buffer.getvalue())  # HANG: upload


def train(rank: int, world_size: int, port: int, gateway: tuple[str, int]) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world_size)
    torch.manual_seed(0)
    model = DDP(TwoTower())
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-4)
    g = torch.Generator().manual_seed(rank)
    for step in range(1, 61):
        users, items = torch.randn(8, 1024, generator=g), torch.randn(8, 1024, generator=g)
        loss = nn.functional.mse_loss(model(users, items), torch.ones(8))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(f"rank {rank} step {step} loss {loss.item():.4f}", flush=True)
        if rank == world_size - 1 and step % CHECKPOINT_EVERY == 0:  # rank 0 does the logging
            upload_checkpoint(gateway, {"model": model.module.state_dict(),
                                        "optimizer": optimizer.state_dict(), "step": step})
    dist.destroy_process_group()


if __name__ == "__main__":
    gateway = socket.create_server(("127.0.0.1", 0))  # the object-store gateway: never reads
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    mp.spawn(train, args=(2, port, gateway.getsockname()), nprocs=2)
