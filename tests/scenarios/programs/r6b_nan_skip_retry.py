"""Prior-fitted regressor trained on batches drawn from a synthetic tabular prior.

Written from https://github.com/automl/TFM-Playground/pull/58 ("count completed training
steps"): `steps_per_epoch` counts optimizer updates rather than batches drawn, and a batch
whose loss is not finite is skipped and another one drawn in its place (the "raise after 100
consecutive skips" guard was reverted). Here the learning rate is too high for the unscaled
targets: the weights blow up within a few steps, every loss after that is inf/nan, every batch
is skipped before backward(), no update ever happens again and the epoch never ends. The
warning about skipped batches is printed once; after that the job spins silently.
"""

import argparse
import math
import warnings

import torch
from torch import nn


class TabularPrior:
    """Infinite stream of random linear-ish regression tasks (a toy stand-in for a TFM prior)."""

    def __init__(self, features: int, rows: int, seed: int = 0):
        self.g = torch.Generator().manual_seed(seed)
        self.features, self.rows = features, rows

    def __iter__(self):
        return self

    def __next__(self):
        x = torch.randn(self.rows, self.features, generator=self.g)
        w = torch.randn(self.features, 1, generator=self.g)
        y = 20.0 * (x @ w + 0.3 * torch.sin(3 * x[:, :1]))  # targets in raw units
        return x, y.squeeze(1)


class Regressor(nn.Module):
    def __init__(self, features: int, hidden: int = 128):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(features, hidden), nn.ReLU(),
                                 nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, 1))

    def forward(self, x):
        return self.net(x).squeeze(1)


def train_epoch(model, opt, sched, batches, steps_per_epoch: int) -> float:
    model.train()
    done, total = 0, 0.0
    while done < steps_per_epoch:  # HANG: count-updates
        x, y = next(batches)
        loss = nn.functional.mse_loss(model(x), y)
        if not torch.isfinite(loss):
            warnings.warn("non-finite loss, skipping batch and drawing another one")
            continue  # HANG: skip
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        done += 1
        total += loss.item()
        if done % 10 == 0:
            print(f"  update {done}/{steps_per_epoch}: loss {loss.item():.3e}", flush=True)
    return total / steps_per_epoch


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--steps-per-epoch", type=int, default=50)
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--warmup", type=int, default=150)
    parser.add_argument("--features", type=int, default=16)
    args = parser.parse_args()

    torch.manual_seed(0)
    model = Regressor(args.features)
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / args.warmup))
    batches = iter(TabularPrior(args.features, rows=256))
    for epoch in range(args.epochs):
        loss = train_epoch(model, opt, sched, batches, args.steps_per_epoch)
        shown = f"{loss:.3e}" if math.isfinite(loss) else str(loss)
        print(f"epoch {epoch}: mean loss {shown}", flush=True)
    print("training finished", flush=True)


if __name__ == "__main__":
    main()
