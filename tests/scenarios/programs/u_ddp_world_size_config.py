"""Minimal transformer training loop from a framework's quick-start, DDP under torchrun.

Written from https://github.com/NVIDIA/Megatron-LM/issues/2458 (the example derives
world_size from the number of devices on the machine instead of torchrun's WORLD_SIZE, so
`torchrun --nproc_per_node=2` on an 8-GPU machine deadlocks in init_process_group): here the
training config says 4 devices per node while torchrun starts 2 processes, so both wait in
the rendezvous of init_process_group for ranks 2 and 3, which never come.
"""

import argparse
import os

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

CONFIG = {"devices_per_node": 4, "num_nodes": 1, "hidden": 64, "layers": 2, "lr": 3e-4}


class MLPStack(nn.Module):
    def __init__(self, hidden: int, layers: int) -> None:
        super().__init__()
        self.layers = nn.Sequential(*(nn.Sequential(nn.Linear(hidden, hidden), nn.GELU())
                                      for _ in range(layers)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layers(x)


def initialize_distributed(config: dict) -> tuple[int, int]:
    rank = int(os.environ["RANK"])
    world_size = config["devices_per_node"] * config["num_nodes"]  # HANG: world-size
    print(f"rank {rank}: initializing with world_size={world_size}", flush=True)
    dist.init_process_group("gloo", rank=rank, world_size=world_size)  # HANG: init
    return rank, world_size


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=20)
    args = parser.parse_args()
    rank, _ = initialize_distributed(CONFIG)
    torch.manual_seed(0)
    model = DDP(MLPStack(CONFIG["hidden"], CONFIG["layers"]))
    optimizer = torch.optim.Adam(model.parameters(), lr=CONFIG["lr"])
    for step in range(args.steps):
        x = torch.randn(16, CONFIG["hidden"])
        loss = model(x).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(f"rank {rank} step {step} loss {loss.item():.4f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
