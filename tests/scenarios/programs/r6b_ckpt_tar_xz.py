"""Tabular MLP: a short training run, then the final checkpoint is packed into a .tar.xz release
artifact (healthy control).

Written from https://github.com/mosaicml/composer/issues/3117 ("More compression options using
CLI tools"): checkpoint compression through Python's `tarfile` (here LZMA, `w:xz`) is slow,
tens of seconds for a checkpoint of a few MB of float weights, single-threaded, with no output
while it runs. Nothing is wrong: the archive is written and the job exits.
"""

import argparse
import json
import os
import tarfile
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def make_data(n: int, features: int, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, features, generator=g)
    w = torch.randn(features, generator=g)
    y = (x @ w + 0.5 * torch.randn(n, generator=g) > 0).float()
    return TensorDataset(x, y)


def build_model(features: int, hidden: int) -> nn.Module:
    return nn.Sequential(nn.Linear(features, hidden), nn.ReLU(), nn.Linear(hidden, hidden),
                         nn.ReLU(), nn.Linear(hidden, 1))


def package(run_dir: str, archive: str) -> None:
    """Pack every file of the run directory into one compressed artifact."""
    with tarfile.open(archive, "w:xz") as tar:
        for name in sorted(os.listdir(run_dir)):
            tar.add(os.path.join(run_dir, name), arcname=name)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--features", type=int, default=64)
    parser.add_argument("--hidden", type=int, default=1100)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--run-dir", default="run_tabular")
    args = parser.parse_args()

    os.makedirs(args.run_dir, exist_ok=True)
    torch.manual_seed(0)
    loader = DataLoader(make_data(4096, args.features), batch_size=256, shuffle=True)
    model = build_model(args.features, args.hidden)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    history = []
    for epoch in range(args.epochs):
        total = 0.0
        for x, y in loader:
            loss = nn.functional.binary_cross_entropy_with_logits(model(x).squeeze(1), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item()
        history.append(total / len(loader))
        print(f"epoch {epoch}: loss {history[-1]:.4f}", flush=True)

    weights = os.path.join(args.run_dir, "checkpoint.pt")
    torch.save({"model": model.state_dict(), "optimizer": opt.state_dict()}, weights)
    with open(os.path.join(args.run_dir, "metrics.json"), "w") as f:
        json.dump({"loss": history, "args": vars(args)}, f)
    print(f"saved {weights} ({os.path.getsize(weights) / 2**20:.1f} MiB); packaging ...",
          flush=True)
    started = time.time()
    archive = args.run_dir + ".tar.xz"
    package(args.run_dir, archive)
    print(f"wrote {archive} ({os.path.getsize(archive) / 2**20:.1f} MiB) in "
          f"{time.time() - started:.1f} s", flush=True)


if __name__ == "__main__":
    main()
