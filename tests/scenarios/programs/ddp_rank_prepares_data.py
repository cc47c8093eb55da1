"""Before joining the process group, each rank makes sure its dataset shard is present. Rank 1's
shard is missing and it downloads it from a mirror that accepts the connection but never sends
anything; rank 0 waits in init_process_group for rank 1 to join."""

import os
import socket
import urllib.request

import torch
import torch.distributed as dist
from torch import nn


def ensure_shard(rank: int) -> torch.Tensor:
    if rank == 0:
        return torch.randn(256, 17, generator=torch.Generator().manual_seed(0))
    mirror = socket.socket()
    mirror.bind(("127.0.0.1", 0))
    mirror.listen(8)
    url = f"http://127.0.0.1:{mirror.getsockname()[1]}/shards/{rank}.pt"
    with urllib.request.urlopen(url) as response:  # HANG: shard
        return torch.frombuffer(bytearray(response.read()), dtype=torch.float32).view(-1, 17)


def main() -> None:
    rank = int(os.environ["RANK"])
    shard = ensure_shard(rank)
    dist.init_process_group("gloo")  # HANG: init
    world = dist.get_world_size()
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for step in range(0, len(shard), 32):
        batch = shard[step:step + 32]
        loss = nn.functional.mse_loss(model(batch[:, :16]), batch[:, 16:])
        optimizer.zero_grad()
        loss.backward()
        for parameter in model.parameters():
            dist.all_reduce(parameter.grad)
            parameter.grad /= world
        optimizer.step()
        print(f"rank {rank} step {step} loss {loss.item():.4f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
