# case: HL104 real https://github.com/m-bain/frozen-in-time/pull/23
# DataParallel over the 8 GPUs of the node with a configured batch size that 8 does not
# divide: some replicas got nothing and the forward failed (issue #9; the fix stopped using
# DataParallel for such batch sizes).
import torch
from torch.utils.data import DataLoader

CONFIG = {"n_gpu": 8, "batch_size": 12}


class Trainer:
    def __init__(self, model, dataset):
        self.model = torch.nn.DataParallel(model, device_ids=list(range(8)))
        self.loader = DataLoader(dataset, batch_size=CONFIG["batch_size"])  # expect: HL104
