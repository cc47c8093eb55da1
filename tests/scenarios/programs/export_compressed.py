"""After training, the exporter compresses the checkpoint with gzip, reading gzip's output
through a pipe, but it waits for gzip to exit before reading anything."""

import subprocess
import tempfile
from pathlib import Path

import torch
from torch import nn


def train(model: nn.Module, steps: int) -> None:
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    generator = torch.Generator().manual_seed(0)
    for step in range(steps):
        x = torch.randn(32, 256, generator=generator)
        loss = nn.functional.mse_loss(model(x), x[:, :1])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(f"step {step} loss {loss.item():.4f}", flush=True)


def export(model: nn.Module, directory: Path) -> bytes:
    path = directory / "model.pt"
    torch.save(model.state_dict(), path)
    gzip = subprocess.Popen(["gzip", "-c", str(path)], stdout=subprocess.PIPE)
    if gzip.wait() != 0:  # HANG: export
        raise RuntimeError("gzip failed")
    return gzip.stdout.read()


def main() -> None:
    model = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 1))
    train(model, 20)
    with tempfile.TemporaryDirectory() as directory:
        blob = export(model, Path(directory))
    print(f"exported {len(blob)} bytes", flush=True)


if __name__ == "__main__":
    main()
