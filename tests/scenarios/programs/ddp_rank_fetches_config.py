"""Two-rank training. Every 20 steps rank 1 polls a parameter server for an updated learning
rate; the server accepts the connection but never replies, and the read has no timeout. Rank 0
goes on to the next step's all_reduce."""

import socket

import torch
import torch.distributed as dist
from torch import nn


def average_gradients(model: nn.Module, world: int) -> None:
    for parameter in model.parameters():
        dist.all_reduce(parameter.grad)  # HANG: grads
        parameter.grad /= world


def fetch_learning_rate(address: tuple[str, int], current: float) -> float:
    with socket.create_connection(address) as connection:
        connection.sendall(b"GET lr\n")
        reply = connection.recv(64)  # HANG: poll-server
    return float(reply) if reply else current


def main() -> None:
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    address = server.getsockname()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    generator = torch.Generator().manual_seed(rank)
    for step in range(1, 201):
        if rank == 1 and step % 20 == 0:
            for group in optimizer.param_groups:
                group["lr"] = fetch_learning_rate(address, group["lr"])
        x = torch.randn(32, 16, generator=generator)
        loss = nn.functional.mse_loss(model(x), x.sum(1, keepdim=True))
        optimizer.zero_grad()
        loss.backward()
        average_gradients(model, world)
        optimizer.step()
        print(f"rank {rank} step {step} loss {loss.item():.4f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
