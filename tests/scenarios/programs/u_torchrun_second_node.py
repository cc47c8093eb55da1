"""Multi-node DDP training script, launched with one torchrun command per node:
`torchrun --nnodes 2 --nproc-per-node 2 --node-rank N --master-addr HOST --master-port PORT`.

Written from https://github.com/pytorch/pytorch/issues/52848 ("init_process_group with
launch.py --nnode=2 hangs always in all machines"; the reply: usually a wrongly set world size
or ranks): the command for node 0 is run and the one for node 1 never is, so torchrun's agent
waits in the rendezvous for the second node and this script never even starts.
"""

import os

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


class Classifier(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 4))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


def main() -> None:
    dist.init_process_group("gloo")
    rank, local_rank = dist.get_rank(), int(os.environ["LOCAL_RANK"])
    print(f"rank {rank} (local {local_rank}) of {dist.get_world_size()} started", flush=True)
    g = torch.Generator().manual_seed(0)
    data = TensorDataset(torch.randn(1024, 32, generator=g),
                         torch.randint(0, 4, (1024,), generator=g))
    loader = DataLoader(data, batch_size=32, sampler=DistributedSampler(data))
    model = DDP(Classifier())
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    for epoch in range(3):
        loader.sampler.set_epoch(epoch)
        for x, y in loader:
            loss = nn.functional.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        print(f"rank {rank} epoch {epoch} loss {loss.item():.4f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
