"""ImageNet-example-style training script that takes its place in the job from the command
line: `--dist-url tcp://HOST:PORT --world-size N --rank R`, one command per machine.

Written from https://github.com/pytorch/pytorch/issues/8091 (examples/imagenet/main.py hangs
when --world-size is greater than 1: init_process_group never returns) and
https://github.com/pytorch/pytorch/issues/49846 (rank 0 of a 2-process group started alone):
the command for rank 0 is run, the one for rank 1 never is, so rank 0 waits in
init_process_group for a peer that does not exist.
"""

import argparse

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="distributed image classifier")
    parser.add_argument("--dist-url", default="tcp://127.0.0.1:23456")
    parser.add_argument("--dist-backend", default="gloo")
    parser.add_argument("--world-size", type=int, default=1)
    parser.add_argument("--rank", type=int, default=0)
    parser.add_argument("--epochs", type=int, default=2)
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    print(f"=> rank {args.rank} of {args.world_size}, rendezvous at {args.dist_url}", flush=True)
    dist.init_process_group(backend=args.dist_backend, init_method=args.dist_url,  # HANG: init
                            world_size=args.world_size, rank=args.rank)
    model = DDP(nn.Sequential(nn.Flatten(), nn.Linear(192, 64), nn.ReLU(), nn.Linear(64, 10)))
    g = torch.Generator().manual_seed(0)
    data = TensorDataset(torch.randn(512, 3, 8, 8, generator=g),
                         torch.randint(0, 10, (512,), generator=g))
    loader = DataLoader(data, batch_size=32, sampler=DistributedSampler(data))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
    for epoch in range(args.epochs):
        loader.sampler.set_epoch(epoch)
        for images, target in loader:
            loss = nn.functional.cross_entropy(model(images), target)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        print(f"epoch {epoch} loss {loss.item():.4f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
