# case: HL104 textbook
# The issue's own example: four devices, the batch size in a module constant.
import torch.nn as nn
from torch.utils.data import DataLoader

BATCH_SIZE = 30


def build(model, dataset):
    model = nn.DataParallel(model, device_ids=[0, 1, 2, 3])
    loader = DataLoader(dataset, batch_size=BATCH_SIZE, shuffle=True)  # expect: HL104
    return model, loader
