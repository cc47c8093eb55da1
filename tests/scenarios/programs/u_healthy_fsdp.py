"""Healthy control: FSDP2 (`fully_shard`) training under torchrun, gloo on CPU, following
the FSDP tutorial (https://docs.pytorch.org/tutorials/_sources/intermediate/FSDP1_tutorial.rst.txt
and its FSDP2 successor): each block sharded, then the root; the loss averaged over ranks
with an all_reduce every rank calls; a full checkpoint gathered on every rank (the gather is
a collective) and written by rank 0 only.
"""

import io

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.fsdp import fully_shard


class Block(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.ff = nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, 2 * dim), nn.GELU(),
                                nn.Linear(2 * dim, dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.ff(x)


class Net(nn.Module):
    def __init__(self, dim: int = 32, depth: int = 3) -> None:
        super().__init__()
        self.blocks = nn.ModuleList(Block(dim) for _ in range(depth))
        self.out = nn.Linear(dim, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block in self.blocks:
            x = block(x)
        return self.out(x)


def main() -> None:
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = Net()
    for block in model.blocks:
        fully_shard(block)
    fully_shard(model)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(rank)
    for step in range(1, 41):
        x = torch.randn(32, 32, generator=g)
        loss = nn.functional.mse_loss(model(x), x.mean(1, keepdim=True))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % 10 == 0:
            mean_loss = loss.detach().clone()
            dist.all_reduce(mean_loss, op=dist.ReduceOp.AVG)
            full = {name: p.full_tensor() for name, p in model.state_dict().items()}
            if rank == 0:
                torch.save(full, io.BytesIO())
                print(f"step {step} mean loss {mean_loss.item():.4f}, checkpoint saved", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
