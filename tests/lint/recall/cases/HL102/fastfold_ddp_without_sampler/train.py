# case: HL102 real https://github.com/hpcaitech/FastFold/pull/141
# DDP training where every data-parallel group received the same batches until a
# distributed sampler was added.
import torch
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader


class Trainer:
    def __init__(self, model, dataset, rank):
        self.model = DistributedDataParallel(model.cuda(rank), device_ids=[rank])
        self.loader = DataLoader(dataset, batch_size=1, shuffle=True)  # expect: HL102
        self.optimizer = torch.optim.Adam(self.model.parameters())

    def fit(self):
        for features in self.loader:
            loss = self.model(features).mean()
            loss.backward()
            self.optimizer.step()
