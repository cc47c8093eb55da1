import torch

from logbook import Logbook


def report(model: torch.nn.Module):
    Logbook("https://elog.example/Training").post("run finished", {"params": "n/a"})
    return sum(p.numel() for p in model.parameters())
