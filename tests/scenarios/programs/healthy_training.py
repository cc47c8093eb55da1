"""Healthy: a short ordinary training run with a DataLoader and two workers."""

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def main() -> None:
    samples = torch.randn(512, 17, generator=torch.Generator().manual_seed(0))
    loader = DataLoader(TensorDataset(samples[:, :16], samples[:, 16:]), batch_size=16,
                        shuffle=True, num_workers=2)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for epoch in range(2):
        for x, y in loader:
            loss = nn.functional.mse_loss(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        print(f"epoch {epoch} loss {loss.item():.4f}", flush=True)


if __name__ == "__main__":
    main()
