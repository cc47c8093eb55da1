"""Sparse-autoencoder training on cached activations, DDP under torchrun.

Written from https://github.com/EleutherAI/sparsify/pull/5 (trainer hangs after saving):
`save()` returns at once on every rank but 0, so only rank 0 reaches the barrier at its end,
while the other ranks go on to the next step and wait in DDP's gradient all-reduce inside
backward().
"""

import argparse
import os

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler


class CachedActivations(Dataset):
    def __init__(self, size: int = 8192, dim: int = 32) -> None:
        self.rows = torch.randn(size, dim, generator=torch.Generator().manual_seed(0))

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, index: int) -> torch.Tensor:
        return self.rows[index]


class SparseAutoencoder(nn.Module):
    def __init__(self, dim: int = 32, latents: int = 128) -> None:
        super().__init__()
        self.encoder = nn.Linear(dim, latents)
        self.decoder = nn.Linear(latents, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.decoder(torch.relu(self.encoder(x)))


def save(model: DDP, step: int, out_dir: str) -> None:
    if dist.get_rank() != 0:
        return  # HANG: early-return
    torch.save(model.module.state_dict(), os.path.join(out_dir, f"sae-{step}.pt"))
    dist.barrier()  # HANG: save-barrier


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--save-every", type=int, default=30)
    parser.add_argument("--out-dir", default="checkpoints")
    args = parser.parse_args()
    dist.init_process_group("gloo")
    os.makedirs(args.out_dir, exist_ok=True)
    torch.manual_seed(0)
    model = DDP(SparseAutoencoder())
    dataset = CachedActivations()
    sampler = DistributedSampler(dataset)
    loader = DataLoader(dataset, batch_size=32, sampler=sampler)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    step = 0
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        for batch in loader:
            loss = (model(batch) - batch).pow(2).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            step += 1
            if step % 10 == 0:
                print(f"rank {dist.get_rank()} step {step} loss {loss.item():.4f}", flush=True)
            if step % args.save_every == 0:
                save(model, step, args.out_dir)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
