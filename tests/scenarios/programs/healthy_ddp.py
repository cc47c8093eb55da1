"""Healthy: two-rank data-parallel training with gradients averaged by all_reduce, a barrier
at the end of each epoch, and a final evaluation all_reduce."""

import torch
import torch.distributed as dist
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def main() -> None:
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    samples = torch.randn(320, 17, generator=torch.Generator().manual_seed(rank))
    loader = DataLoader(TensorDataset(samples[:, :16], samples[:, 16:]), batch_size=16)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for epoch in range(2):
        for x, y in loader:
            loss = nn.functional.mse_loss(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            for parameter in model.parameters():
                dist.all_reduce(parameter.grad)
                parameter.grad /= world
            optimizer.step()
        dist.barrier()
        print(f"rank {rank} epoch {epoch} loss {loss.item():.4f}", flush=True)
    final = loss.detach().clone()
    dist.all_reduce(final)
    print(f"rank {rank} mean final loss {final.item() / world:.4f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
