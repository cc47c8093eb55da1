# case: HL102 textbook
# The loader is built in the project's data module; the DDP training script uses it as is.
import torch
from torch.nn.parallel import DistributedDataParallel as DDP

from data import build_loader


def main(model, dataset, rank):
    model = DDP(model.to(rank), device_ids=[rank])
    loader = build_loader(dataset, batch_size=32)  # expect: HL102
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in loader:
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
