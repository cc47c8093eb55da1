# case: HL102 textbook
# FSDP shards the model, not the data: the loader still needs a DistributedSampler.
import torch
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP


def build(model, dataset):
    model = FSDP(model)
    loader = torch.utils.data.DataLoader(dataset, batch_size=4, shuffle=True)  # expect: HL102
    return model, loader
