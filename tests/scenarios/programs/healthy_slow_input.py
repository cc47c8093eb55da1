"""Healthy: every batch takes the DataLoader worker most of a second to produce (heavy
decoding), so the training loop waits for data, but it always gets it."""

import time

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset


class SlowDecodeDataset(Dataset):
    def __len__(self) -> int:
        return 24

    def __getitem__(self, index: int):
        time.sleep(0.2)  # decoding a large image
        row = torch.randn(17, generator=torch.Generator().manual_seed(index))
        return row[:16], row[16:]


def main() -> None:
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    loader = DataLoader(SlowDecodeDataset(), batch_size=8, num_workers=1)
    for step, (x, y) in enumerate(loader):
        loss = nn.functional.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(f"step {step} loss {loss.item():.4f}", flush=True)
    print("done", flush=True)


if __name__ == "__main__":
    main()
