# case: HL203 real https://github.com/pytorch/pytorch/issues/130610
# Training with pin_memory=True and workers, validating every few steps with a second
# forking loader: the validation workers are forked while the training loader's pin-memory
# thread holds a libc lock, and a worker deadlocks on it (the reporter's fix: spawn).
import torch
from torch.utils.data import DataLoader


def train(model, train_set, val_set, optimizer, eval_every=500):
    train_loader = DataLoader(train_set, batch_size=32, num_workers=8, pin_memory=True,
                              shuffle=True)
    val_loader = DataLoader(val_set, batch_size=64, num_workers=4)
    for step, (x, y) in enumerate(train_loader):
        loss = torch.nn.functional.cross_entropy(model(x.cuda()), y.cuda())
        loss.backward()
        optimizer.step()
        if step % eval_every == 0:
            with torch.no_grad():
                for vx, vy in val_loader:  # expect: HL203
                    model(vx.cuda())
