# case: HL104 textbook
# The batch size comes from the project's config module.
import torch
from torch.utils.data import DataLoader

from config import BATCH_SIZE, GPUS


def build(model, dataset):
    model = torch.nn.DataParallel(model, device_ids=GPUS)
    return model, DataLoader(dataset, batch_size=BATCH_SIZE)  # expect: HL104
