"""Autoencoder on synthetic sensor windows, with a resumable checkpoint every epoch.

Written from https://github.com/toolforge/video2commons/pull/380 (a job caps the size of every
file it writes with `ulimit -f`, and then an output grows past the cap) and the symptom of
https://github.com/zai-org/ChatGLM-6B/issues/1166 ("PytorchStreamWriter failed writing file
... file write failed" while saving the optimizer state). The script caps RLIMIT_FSIZE at
start so a runaway debug dump cannot fill the shared scratch disk; the weights-only checkpoint
fits, the full one with Adam's moments does not: write() fails with EFBIG (Python ignores
SIGXFSZ) and torch.save raises.
"""

import argparse
import os
import resource
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

MAX_FILE_BYTES = 16 << 20  # no single output file above 16 MiB on the shared scratch disk


class SensorWindows(Dataset):
    def __init__(self, n: int, width: int, seed: int = 0):
        g = torch.Generator().manual_seed(seed)
        t = torch.linspace(0, 20, width)
        freq = torch.rand(n, 1, generator=g) * 3 + 0.5
        self.x = torch.sin(freq * t) + 0.05 * torch.randn(n, width, generator=g)

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return self.x[i]


class AutoEncoder(nn.Module):
    def __init__(self, width: int, hidden: int):
        super().__init__()
        self.enc = nn.Sequential(nn.Linear(width, hidden), nn.GELU(), nn.Linear(hidden, 64))
        self.dec = nn.Sequential(nn.Linear(64, hidden), nn.GELU(), nn.Linear(hidden, width))

    def forward(self, x):
        return self.dec(self.enc(x))


class Checkpointer:
    def __init__(self, directory: str):
        self.dir = directory
        os.makedirs(directory, exist_ok=True)

    def save(self, epoch: int, model: nn.Module, opt: torch.optim.Optimizer, full: bool):
        state = {"epoch": epoch, "model": model.state_dict()}
        if full:
            state["optimizer"] = opt.state_dict()
        path = os.path.join(self.dir, f"epoch{epoch:03d}.pt")
        started = time.time()
        torch.save(state, path)  # HANG: save
        size = os.path.getsize(path) / 2**20
        print(f"  saved {path} ({size:.1f} MiB, {time.time() - started:.2f} s)", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--width", type=int, default=1024)
    parser.add_argument("--hidden", type=int, default=1536)
    parser.add_argument("--full-every", type=int, default=3)
    parser.add_argument("--out", default="ckpt_ae")
    args = parser.parse_args()

    resource.setrlimit(resource.RLIMIT_FSIZE, (MAX_FILE_BYTES, MAX_FILE_BYTES))  # HANG: cap

    data = DataLoader(SensorWindows(2048, args.width), batch_size=64, shuffle=True)
    model = AutoEncoder(args.width, args.hidden)
    n_params = sum(p.numel() for p in model.parameters())
    print(f"params: {n_params / 1e6:.2f} M ({n_params * 4 / 2**20:.1f} MiB fp32)", flush=True)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    ckpt = Checkpointer(args.out)
    for epoch in range(1, args.epochs + 1):
        total = 0.0
        for x in data:
            loss = nn.functional.mse_loss(model(x), x)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item()
        print(f"epoch {epoch}: recon {total / len(data):.5f}", flush=True)
        ckpt.save(epoch, model, opt, full=epoch % args.full_every == 0)
    print("done", flush=True)


if __name__ == "__main__":
    main()
