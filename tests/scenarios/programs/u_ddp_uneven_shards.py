"""Speech-recognition-style training on utterance shards, DDP under torchrun.

Written from https://github.com/k2-fsa/snowfall/issues/152 (and pytorch/pytorch#33148): each
rank takes a contiguous partition of the utterance list with `ceil(total / world_size)`
items per partition, so the last rank gets fewer batches. It leaves the epoch loop early and
waits in the barrier before validation, while rank 0 waits in DDP's gradient all-reduce inside
backward() of its next batch.
"""

import argparse
import math

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset


class Utterances(Dataset):
    """Feature frames and a per-utterance target, for this rank's partition of the corpus."""

    def __init__(self, total: int, rank: int, world_size: int) -> None:
        per_partition = math.ceil(total / world_size)
        start = rank * per_partition
        self.ids = list(range(start, min(start + per_partition, total)))

    def __len__(self) -> int:
        return len(self.ids)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        g = torch.Generator().manual_seed(self.ids[index])
        frames = torch.randn(20, 40, generator=g)
        return frames, frames.mean(0)[:8]


class Encoder(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.rnn = nn.GRU(40, 64, batch_first=True)
        self.out = nn.Linear(64, 8)

    def forward(self, frames: torch.Tensor) -> torch.Tensor:
        hidden, _ = self.rnn(frames)
        return self.out(hidden[:, -1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--utterances", type=int, default=161)
    parser.add_argument("--batch-size", type=int, default=8)
    args = parser.parse_args()
    dist.init_process_group("gloo")
    rank, world_size = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    shard = Utterances(args.utterances, rank, world_size)  # HANG: partition
    loader = DataLoader(shard, batch_size=args.batch_size, shuffle=True)
    model = DDP(Encoder())
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    for epoch in range(3):
        for step, (frames, target) in enumerate(loader):
            loss = nn.functional.mse_loss(model(frames), target)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            if step % 2 == 0:
                print(f"rank {rank} epoch {epoch} step {step} loss {loss.item():.4f}", flush=True)
        dist.barrier()  # HANG: epoch-end
        if rank == 0:
            with torch.no_grad():
                frames, target = next(iter(loader))
                val = nn.functional.mse_loss(model.module(frames), target)
            print(f"epoch {epoch} validation loss {val.item():.4f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
