# case: HL102 real https://github.com/binbinao/physicsnemo-from-zero-to-one/issues/143
# The multi-GPU chapter built DataLoader(shuffle=True) instead of using a DistributedSampler:
# every rank saw exactly the same data and DDP degenerated to one GPU's work.
import os

import torch
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader


def train(model, dataset, epochs):
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.distributed.init_process_group(backend="nccl")
    model = DDP(model.cuda(local_rank), device_ids=[local_rank])
    loader = DataLoader(dataset, batch_size=8, shuffle=True, num_workers=2)  # expect: HL102
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    for _ in range(epochs):
        for x, y in loader:
            loss = torch.nn.functional.mse_loss(model(x.cuda()), y.cuda())
            opt.zero_grad()
            loss.backward()
            opt.step()
