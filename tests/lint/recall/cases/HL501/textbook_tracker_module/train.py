import torch

from tracker import Tracker


def train(model, loader, optimizer):
    tracker = Tracker("http://metrics.internal/api")
    for step, (x, y) in enumerate(loader):
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        tracker.log({"step": step, "loss": loss.item()})
