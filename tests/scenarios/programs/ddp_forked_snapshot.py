"""Two-rank training that writes checkpoints asynchronously: every 10 steps each rank forks a
child that serialises a copy-on-write snapshot of the model and uploads it, while the parent
trains on. Rank 1 then stops early (its own validation loss stopped improving) and returns
from main; rank 0 goes on to the next gradient all_reduce."""

import io
import os
import time

import torch
import torch.distributed as dist
from torch import nn


def average_gradients(model: nn.Module, world: int) -> None:
    for parameter in model.parameters():
        dist.all_reduce(parameter.grad)  # HANG: grads
        parameter.grad /= world


def snapshot_in_background(model: nn.Module, step: int) -> None:
    if os.fork() == 0:  # the child sees the weights as they are now, at no copying cost
        buffer = io.BytesIO()
        torch.save(model.state_dict(), buffer)
        time.sleep(120)  # uploading to remote storage
        os._exit(0)


def main() -> None:
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    generator = torch.Generator().manual_seed(rank)
    best, bad_checks = float("inf"), 0
    for step in range(1, 201):
        x = torch.randn(32, 16, generator=generator)
        loss = nn.functional.mse_loss(model(x), x.sum(1, keepdim=True))
        optimizer.zero_grad()
        loss.backward()
        average_gradients(model, world)
        optimizer.step()
        print(f"rank {rank} step {step} loss {loss.item():.4f}", flush=True)
        if step % 10 == 0:
            snapshot_in_background(model, step)
            validation = loss.item() + (step if rank == 1 else 0.0)
            if validation < best:
                best, bad_checks = validation, 0
            elif (bad_checks := bad_checks + 1) >= 2:
                print(f"rank {rank}: early stopping at step {step}", flush=True)
                return  # HANG: leave
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
