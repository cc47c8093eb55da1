# case: HL101 fixed https://github.com/jpata/particleflow/pull/233
# Rank-0 validation through the bare module: no collective inside.
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def run(rank, model, valid_loader):
    model = DDP(model.to(rank), device_ids=[rank])
    if rank == 0:
        with torch.no_grad():
            for x, _ in valid_loader:
                print(model.module(x).sum().item())
    dist.barrier()
