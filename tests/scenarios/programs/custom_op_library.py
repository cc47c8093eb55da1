"""The model uses a custom operator from a compiled extension, loaded at start-up. The
extension's shared library was built on another machine and is not installed on this one (its
build folder was not shipped with the job)."""

import os

import torch
from torch import nn

EXTENSION = os.path.join(os.path.dirname(os.path.abspath(__file__)), "build",
                         "libfused_ops.so")


class FusedMLP(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layers = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layers(x)


def main() -> None:
    print("loading the fused-ops extension", flush=True)
    torch.ops.load_library(EXTENSION)
    model = FusedMLP()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for step in range(20):
        x = torch.randn(32, 16)
        loss = nn.functional.mse_loss(model(x), x.sum(1, keepdim=True))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(f"step {step} loss {loss.item():.4f}", flush=True)


if __name__ == "__main__":
    main()
