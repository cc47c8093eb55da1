"""Character-level BERT pre-training started with torch.multiprocessing.spawn (DDP, gloo).

Written from https://github.com/helboukkouri/character-bert-pretraining/issues/4 (the
training script hangs at init_process_group; "it will hang unless you pass nprocs=world_size
to mp.spawn"): the script spawns one process per available device (two here), but
world_size comes from the --world-size flag, whose default was written for a 4-GPU machine.
Both processes wait in init_process_group for ranks 2 and 3.
"""

import argparse
import socket

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP


class CharEncoder(nn.Module):
    def __init__(self, chars: int = 128, dim: int = 64) -> None:
        super().__init__()
        self.embed = nn.Embedding(chars, dim)
        self.conv = nn.Conv1d(dim, dim, 3, padding=1)
        self.mlm_head = nn.Linear(dim, chars)

    def forward(self, chars: torch.Tensor) -> torch.Tensor:
        x = self.conv(self.embed(chars).transpose(1, 2)).transpose(1, 2)
        return self.mlm_head(torch.relu(x))


def pretrain(rank: int, args: argparse.Namespace) -> None:
    print(f"process {rank}: joining a world of {args.world_size}", flush=True)
    dist.init_process_group("gloo", init_method=args.init_method, rank=rank,  # HANG: init
                            world_size=args.world_size)
    torch.manual_seed(0)
    model = DDP(CharEncoder())
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    for step in range(args.steps):
        chars = torch.randint(0, 128, (16, 24))
        masked = chars.masked_fill(torch.rand(chars.shape) < 0.15, 0)
        loss = nn.functional.cross_entropy(model(masked).flatten(0, 1), chars.flatten())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(f"rank {rank} step {step} loss {loss.item():.4f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--world-size", type=int, default=4)  # HANG: world-size
    parser.add_argument("--steps", type=int, default=20)
    args = parser.parse_args()
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        args.init_method = f"tcp://127.0.0.1:{probe.getsockname()[1]}"
    nprocs = max(torch.cuda.device_count(), 2)  # one process per device; 2 on a CPU box
    mp.spawn(pretrain, args=(args,), nprocs=nprocs)
