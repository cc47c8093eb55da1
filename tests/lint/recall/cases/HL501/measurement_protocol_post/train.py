import torch

from report import report


def run(model, batches):
    for batch in batches:
        model(torch.as_tensor(batch))
    report("UA-1", "trainer", [{"t": "event", "ec": "training", "ea": "done"}])
