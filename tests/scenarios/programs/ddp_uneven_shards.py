"""Two-rank training where each rank reads its own shard of a dataset that does not split
evenly: rank 0 gets more batches than rank 1. Gradients are averaged with all_reduce every step,
and the ranks meet at a barrier after the epoch."""

import torch
import torch.distributed as dist
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def average_gradients(model: nn.Module, world: int) -> None:
    for parameter in model.parameters():
        dist.all_reduce(parameter.grad)  # HANG: grads
        parameter.grad /= world


def main() -> None:
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    samples = torch.randn(300, 17, generator=torch.Generator().manual_seed(1))
    shard = samples[rank * 170:(rank + 1) * 170]  # 170 and 130 samples
    loader = DataLoader(TensorDataset(shard[:, :16], shard[:, 16:]), batch_size=10)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for step, (x, y) in enumerate(loader):
        loss = nn.functional.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        average_gradients(model, world)
        optimizer.step()
        print(f"rank {rank} step {step} loss {loss.item():.4f}", flush=True)
    dist.barrier()  # HANG: epoch-end
    print(f"rank {rank} epoch done", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
