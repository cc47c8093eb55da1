"""Train a small regressor on features produced by an external feature-extraction step: the
script runs the extractor as a child process (`<script> --extract N`), which prints one line of
comma-separated features per example, and parses its stdout.

Written from https://github.com/google/turbinia/issues/945 ("Possible deadlock from excessive
stdout"): a task starts a tool with `stdout=PIPE` and calls `wait()` before reading the output.
As long as the tool prints little, this works; once it prints more than the pipe buffer holds
(64 KiB on Linux), the child blocks in `write()` until someone reads, and the parent blocks in
`wait()` until the child exits, for ever (the deadlock the `Popen.wait` docs warn about).
"""

import argparse
import subprocess
import sys

import torch
from torch import nn

DIM = 24


def extract(count: int) -> None:
    g = torch.Generator().manual_seed(0)
    for i in range(count):
        row = torch.randn(DIM, generator=g)
        print(f"{i}," + ",".join(f"{v:.6f}" for v in row.tolist()))


def run_extractor(count: int) -> torch.Tensor:
    cmd = [sys.executable, __file__, "--extract", str(count)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    if proc.wait() != 0:  # HANG: wait
        raise RuntimeError(f"feature extractor failed with exit code {proc.returncode}")
    rows = [line.split(",")[1:] for line in proc.stdout.read().splitlines()]
    return torch.tensor([[float(v) for v in row] for row in rows])


def train(features: torch.Tensor, steps: int) -> None:
    target = features @ torch.linspace(-1, 1, DIM)
    model = nn.Sequential(nn.Linear(DIM, 32), nn.ReLU(), nn.Linear(32, 1))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    for step in range(steps):
        idx = torch.randint(0, len(features), (64,))
        loss = nn.functional.mse_loss(model(features[idx]).squeeze(1), target[idx])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % 20 == 0:
            print(f"step {step} loss {loss.item():.4f}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--extract", type=int, default=None)
    parser.add_argument("--warmup-examples", type=int, default=200)
    parser.add_argument("--examples", type=int, default=20000)
    args = parser.parse_args()
    if args.extract is not None:
        extract(args.extract)
        return

    # quick run on a small extract first, to check the pipeline end to end
    print(f"extracting {args.warmup_examples} examples (smoke test)", flush=True)
    train(run_extractor(args.warmup_examples), steps=60)
    print(f"extracting {args.examples} examples", flush=True)
    features = run_extractor(args.examples)
    print(f"got {len(features)} examples", flush=True)
    train(features, steps=200)


if __name__ == "__main__":
    main()
