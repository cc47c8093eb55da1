"""Healthy control: DDP training under torchrun done right, in the shape of a user's
template for DDP with torchrun (https://blog.csdn.net/Ookura_Resona/article/details/141941284):
DistributedSampler with set_epoch, rank-0 checkpoints written outside any collective through
`model.module`, a barrier that every rank reaches, and the validation loss averaged with an
all_reduce that every rank calls.
"""

import argparse
import io

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler


class Points(Dataset):
    def __init__(self, size: int, seed: int) -> None:
        g = torch.Generator().manual_seed(seed)
        self.x = torch.randn(size, 10, generator=g)
        self.y = (self.x[:, :3].sum(1) > 0).long()

    def __len__(self) -> int:
        return len(self.x)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        return self.x[index], self.y[index]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=4)
    args = parser.parse_args()
    dist.init_process_group("gloo")
    rank, world_size = dist.get_rank(), dist.get_world_size()
    train, val = Points(2048, seed=0), Points(512, seed=1)
    train_sampler = DistributedSampler(train)
    train_loader = DataLoader(train, batch_size=32, sampler=train_sampler)
    val_loader = DataLoader(val, batch_size=64, sampler=DistributedSampler(val, shuffle=False))
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(10, 32), nn.BatchNorm1d(32), nn.ReLU(), nn.Linear(32, 2)))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    for epoch in range(args.epochs):
        train_sampler.set_epoch(epoch)
        model.train()
        for x, y in train_loader:
            loss = nn.functional.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        model.eval()
        totals = torch.zeros(2)
        with torch.no_grad():
            for x, y in val_loader:
                totals += torch.tensor([nn.functional.cross_entropy(model(x), y).item(), 1.0])
        dist.all_reduce(totals)
        if rank == 0:
            torch.save(model.module.state_dict(), io.BytesIO())
            print(f"epoch {epoch} train {loss.item():.4f} val {totals[0] / totals[1]:.4f}",
                  flush=True)
        dist.barrier()
    print(f"rank {rank}/{world_size} done", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
