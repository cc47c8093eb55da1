# case: HL104 fixed
import torch.nn as nn
from torch.utils.data import DataLoader

PER_DEVICE = 8
DEVICES = [0, 1, 2, 3]
BATCH_SIZE = PER_DEVICE * len(DEVICES)


def build(model, dataset, args):
    model = nn.DataParallel(model, device_ids=DEVICES)
    train = DataLoader(dataset, batch_size=BATCH_SIZE)
    unknown = DataLoader(dataset, batch_size=args.batch_size)
    return model, train, unknown
