"""After the first epoch the script asks whether to continue, reading the answer from stdin.
Run unattended, nobody ever answers."""

import torch
from torch import nn


def run_epoch(model: nn.Module, optimizer: torch.optim.Optimizer, epoch: int) -> float:
    generator = torch.Generator().manual_seed(epoch)
    for _ in range(20):
        x = torch.randn(32, 16, generator=generator)
        loss = nn.functional.mse_loss(model(x), x.sum(1, keepdim=True))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return loss.item()


def main() -> None:
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for epoch in range(10):
        loss = run_epoch(model, optimizer, epoch)
        print(f"epoch {epoch} loss {loss:.4f}", flush=True)
        if epoch == 0:
            answer = input("validation loss looks high, continue? [y/N] ")  # HANG: prompt
            if answer.strip().lower() != "y":
                break


if __name__ == "__main__":
    main()
