# case: HL102 fixed https://github.com/EleutherAI/oslo/pull/60
import torch
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


def main(model, dataset, rank):
    model = DistributedDataParallel(model.to(rank), device_ids=[rank])
    sampler = DistributedSampler(dataset)
    loader = DataLoader(dataset, batch_size=16, sampler=sampler)
    for epoch in range(3):
        sampler.set_epoch(epoch)
        for batch in loader:
            model(batch).sum().backward()
    return torch.zeros(1)
