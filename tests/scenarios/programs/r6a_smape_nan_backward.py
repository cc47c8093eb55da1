"""Sales forecaster trained with a SMAPE loss on zero-padded windows, under anomaly detection.

Written from https://github.com/pytorch/pytorch/issues/22820 ("RuntimeError 'DivBackward0'
nan values in its 0th output"): for padded steps both the masked prediction and the target are
0, so the element-wise SMAPE is 0/0. The NaNs are masked out of the loss, which is finite, but
backward through `torch.div` still computes grad / denominator = 0/0, and anomaly mode raises at
`loss.backward()` on the first batch that holds a store with unreported days.
"""

import argparse

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset


class StoreSales(Dataset):
    """Daily sales windows; the last days of late-reporting stores are missing, zero-padded."""

    def __init__(self, n_stores: int, window: int, seed: int = 0) -> None:
        g = torch.Generator().manual_seed(seed)
        t = torch.arange(window + 7, dtype=torch.float32)
        self.series, self.masks = [], []
        for i in range(n_stores):
            level = 50 + 30 * torch.rand((), generator=g)
            s = level + 10 * torch.sin(2 * torch.pi * t / 7) + torch.randn(len(t), generator=g)
            mask = torch.ones(len(t))
            if i % 23 == 22:  # the export had not caught up with this store yet
                missing = int(torch.randint(1, 7, (), generator=g))
                s[-missing:], mask[-missing:] = 0.0, 0.0
            self.series.append(s)
            self.masks.append(mask)
        self.window = window

    def __len__(self) -> int:
        return len(self.series)

    def __getitem__(self, i):
        s, m = self.series[i], self.masks[i]
        return s[:self.window] / 100, s[self.window:] / 100, m[self.window:]


def smape(pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    numerator = torch.abs(pred - target)
    denominator = torch.abs(pred) + torch.abs(target)
    elementwise = torch.div(numerator, denominator)  # HANG: div
    nan_mask = torch.isnan(elementwise)
    return elementwise[~nan_mask].mean()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--window", type=int, default=28)
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    torch.autograd.set_detect_anomaly(True)  # chasing NaN weights from the last run
    data = StoreSales(400, args.window)
    loader = DataLoader(data, batch_size=16, shuffle=True)
    model = nn.Sequential(nn.Linear(args.window, 64), nn.ReLU(), nn.Linear(64, 7))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    for epoch in range(args.epochs):
        for step, (history, future, mask) in enumerate(loader):
            pred = model(history) * mask  # no forecast for the days not reported yet
            loss = smape(pred, future * mask)
            optimizer.zero_grad()
            loss.backward()  # HANG: backward
            optimizer.step()
            if step % 10 == 0:
                print(f"epoch {epoch} step {step} smape {loss.item():.4f}", flush=True)


if __name__ == "__main__":
    main()
