"""Healthy: a short training run, then a long evaluation that prints nothing and takes no
optimizer step for several seconds (longer than the hang timeout, shorter than three times it),
then the result."""

import time

import torch
from torch import nn


def evaluate(model: nn.Module, seconds: float) -> float:
    total, count = 0.0, 0
    deadline = time.monotonic() + seconds
    generator = torch.Generator().manual_seed(1)
    with torch.no_grad():
        while time.monotonic() < deadline:
            x = torch.randn(512, 256, generator=generator)
            total += model(x).pow(2).mean().item()
            count += 1
    return total / count


def main() -> None:
    model = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for step in range(10):
        x = torch.randn(64, 256)
        loss = nn.functional.mse_loss(model(x), x[:, :1])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(f"step {step} loss {loss.item():.4f}", flush=True)
    print(f"validation {evaluate(model, 5.0):.4f}", flush=True)


if __name__ == "__main__":
    main()
