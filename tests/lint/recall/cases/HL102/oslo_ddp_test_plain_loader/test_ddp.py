# case: HL102 real https://github.com/EleutherAI/oslo/issues/59
# The DDP test wrapped the model but fed every rank the same plain DataLoader, so each rank
# trained on the whole (duplicated) dataset (fixed in https://github.com/EleutherAI/oslo/pull/60).
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader


def main(model, dataset):
    dist.init_process_group("nccl")
    rank = dist.get_rank()
    model = DistributedDataParallel(model.to(rank), device_ids=[rank])
    loader = DataLoader(dataset, batch_size=16, shuffle=True)  # expect: HL102
    optimizer = torch.optim.Adam(model.parameters())
    for batch in loader:
        loss = model(**batch).loss
        loss.backward()
        optimizer.step()
