"""Two-rank training that skips the update when the loss is not finite. Rank 1's shard holds a
corrupt record (an infinite feature): its loss becomes NaN, and it skips the optimizer step and
the gradient all_reduce of that step, so the ranks fall out of step; at the end of the epoch
rank 1 waits in the barrier and rank 0 in an all_reduce rank 1 will never make."""

import torch
import torch.distributed as dist
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def average_gradients(model: nn.Module, world: int) -> None:
    for parameter in model.parameters():
        dist.all_reduce(parameter.grad)
        parameter.grad /= world


def main() -> None:
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    samples = torch.randn(160, 17, generator=torch.Generator().manual_seed(rank))
    if rank == 1:
        samples[93, 4] = float("inf")  # a corrupt record
    loader = DataLoader(TensorDataset(samples[:, :16], samples[:, 16:]), batch_size=8)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for step, (x, y) in enumerate(loader):
        loss = nn.functional.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        if not torch.isfinite(loss):
            print(f"rank {rank} step {step}: loss {loss.item()}, skipping the update", flush=True)
            continue
        average_gradients(model, world)
        optimizer.step()
        print(f"rank {rank} step {step} loss {loss.item():.4f}", flush=True)
    dist.barrier()
    print(f"rank {rank} epoch done", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
