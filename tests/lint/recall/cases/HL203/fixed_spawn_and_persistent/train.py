# case: HL203 fixed https://github.com/pytorch/pytorch/issues/130610
import torch
from torch.utils.data import DataLoader


def train(model, train_set, val_set, optimizer):
    train_loader = DataLoader(train_set, batch_size=32, num_workers=8, pin_memory=True)
    val_loader = DataLoader(val_set, batch_size=64, num_workers=4,
                            multiprocessing_context="spawn")
    for step, (x, y) in enumerate(train_loader):
        torch.nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()
        if step % 100 == 0:
            for vx, _ in val_loader:
                model(vx)
    for vx, _ in val_loader:
        model(vx)
