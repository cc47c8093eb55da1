"""Two-rank training with early stopping decided on each rank from its own validation loss.
Rank 1's validation loss stops improving first: it leaves the training loop and exits while
rank 0 goes on training."""

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
    best, patience = float("inf"), 3 if rank == 1 else 1000
    for step in range(1, 201):
        x = torch.randn(32, 16, generator=generator)
        loss = nn.functional.mse_loss(model(x), x.sum(1, keepdim=True))
        optimizer.zero_grad()
        loss.backward()
        average_gradients(model, world)
        optimizer.step()
        print(f"rank {rank} step {step} loss {loss.item():.4f}", flush=True)
        if step % 5 == 0:
            validation = loss.item() + (step / 10 if rank == 1 else 0.0)
            if validation < best:
                best, bad_checks = validation, 0
            else:
                bad_checks += 1
                if bad_checks >= patience:
                    print(f"rank {rank}: early stopping at step {step}", flush=True)
                    return  # HANG: leave
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
