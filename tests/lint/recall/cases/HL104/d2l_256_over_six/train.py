# case: HL104 real https://github.com/d2l-ai/d2l-zh/pull/354
# The book's batch size of 256 split over 6 GPUs failed ("cannot be evenly split into 6
# slices"). The original is MXNet's split_and_load; this is the same mistake with torch.
import torch
from torch.utils.data import DataLoader

BATCH_SIZE = 256
DEVICES = [0, 1, 2, 3, 4, 5]


def train(net, train_set):
    net = torch.nn.DataParallel(net, device_ids=DEVICES)
    loader = DataLoader(train_set, batch_size=BATCH_SIZE, shuffle=True)  # expect: HL104
    return net, loader
