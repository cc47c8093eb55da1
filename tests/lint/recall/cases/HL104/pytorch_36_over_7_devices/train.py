# case: HL104 real https://github.com/pytorch/pytorch/issues/52260
# A batch of 36 over 7 devices: DataParallel cut it into 6 chunks and the 7th replica got an
# empty input tuple.
import torch.nn as nn
from torch.utils.data import DataLoader

NUM_DEVICES = 7


def build(model, dataset):
    model = nn.DataParallel(model, device_ids=list(range(NUM_DEVICES)))
    loader = DataLoader(dataset, batch_size=36)  # expect: HL104
    return model, loader
