"""Two-rank training. Rank 1 also computes a running evaluation metric every 10 steps, with a
convergence loop whose tolerance is never reached; rank 0 waits for it in the next
all_reduce."""

import torch
import torch.distributed as dist
from torch import nn


def average_gradients(model: nn.Module, world: int) -> None:
    for parameter in model.parameters():
        dist.all_reduce(parameter.grad)  # HANG: grads
        parameter.grad /= world


def calibrate(model: nn.Module) -> float:
    """Fixed-point iteration for a temperature; the update oscillates and never settles."""
    temperature, previous = 1.0, 0.0
    x = torch.randn(64, 16)
    while abs(temperature - previous) > 1e-6:  # HANG: calibrate
        previous = temperature  # HANG: calibrate
        with torch.no_grad():  # HANG: calibrate
            scale = model(x).std().item()  # HANG: calibrate
        temperature = 2.0 / temperature + 0.0 * scale  # HANG: calibrate
    return temperature


def main() -> None:
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    generator = torch.Generator().manual_seed(rank)
    for step in range(1, 201):
        x = torch.randn(32, 16, generator=generator)
        loss = nn.functional.mse_loss(model(x), x.sum(1, keepdim=True))
        optimizer.zero_grad()
        loss.backward()
        average_gradients(model, world)
        optimizer.step()
        print(f"rank {rank} step {step} loss {loss.item():.4f}", flush=True)
        if rank == 1 and step % 10 == 0:
            print(f"rank {rank} temperature {calibrate(model):.3f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
