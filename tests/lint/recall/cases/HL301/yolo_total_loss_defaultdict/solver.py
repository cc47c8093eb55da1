# case: HL301 real https://github.com/MultimediaTechLab/YOLO/pull/83
# The epoch loop kept a dict of tensor totals, one graph per batch, leaking 1-2 MB per batch.
from collections import defaultdict

import torch


def train_one_epoch(model, loader, loss_fn, optimizer, device):
    total_loss = defaultdict(lambda: torch.tensor(0.0, device=device))
    for images, targets in loader:
        loss, loss_item = loss_fn(model(images), targets)
        loss.backward()
        optimizer.step()
        for loss_name, loss_val in loss_item.items():
            total_loss[loss_name] += loss_val * images.size(0)  # expect: HL301
    return total_loss
