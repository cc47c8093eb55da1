"""Two-rank data-parallel training with gradients averaged by all_reduce. Rank 0 saves a
checkpoint every 10 steps and synchronises with a barrier, inside the `if rank == 0:` block."""

import io

import torch
import torch.distributed as dist
from torch import nn


def average_gradients(model: nn.Module, world: int) -> None:
    for parameter in model.parameters():
        dist.all_reduce(parameter.grad)  # HANG: grads
        parameter.grad /= world


def main() -> None:
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    generator = torch.Generator().manual_seed(rank)
    for step in range(1, 101):
        x = torch.randn(32, 16, generator=generator)
        loss = nn.functional.mse_loss(model(x), x.sum(1, keepdim=True))
        optimizer.zero_grad()
        loss.backward()
        average_gradients(model, world)
        optimizer.step()
        print(f"rank {rank} step {step} loss {loss.item():.4f}", flush=True)
        if rank == 0 and step % 10 == 0:
            torch.save(model.state_dict(), io.BytesIO())
            dist.barrier()  # HANG: checkpoint
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
