# case: HL104 textbook
# The module is imported whole and its constants read as attributes.
import torch
from torch.utils.data import DataLoader

import settings.hparams as hp


def build(model, dataset):
    model = torch.nn.DataParallel(model, device_ids=hp.DEVICES)
    return model, DataLoader(dataset, batch_size=hp.BATCH_SIZE)  # expect: HL104
