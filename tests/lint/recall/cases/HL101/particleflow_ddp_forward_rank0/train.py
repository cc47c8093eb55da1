# case: HL101 real https://github.com/jpata/particleflow/pull/233
# Validation ran on rank 0 only, through the DistributedDataParallel wrapper: its forward
# syncs buffers across ranks, so rank 0 waited for peers that were at the barrier below. The
# fix called model.module() instead (same hang: https://github.com/pytorch/pytorch/issues/54059).
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def run(rank, model, train_loader, valid_loader, optimizer):
    model = DDP(model.to(rank), device_ids=[rank])
    for x, y in train_loader:
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
    if rank == 0:
        with torch.no_grad():
            for x, y in valid_loader:
                prediction = model(x)  # expect: HL101
                print(torch.nn.functional.mse_loss(prediction, y).item())
    dist.barrier()
