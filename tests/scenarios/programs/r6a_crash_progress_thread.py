"""Tabular classifier with a background throughput reporter.

Written from https://github.com/adtech-labs/spylon/issues/32 ("if the main thread throws an
exception and wants to exit, the progress thread keeps the process alive because it's a
non-daemon thread"): validation raises (the held-out labels were built as floats), the
traceback is printed, and the interpreter then waits in its shutdown for the reporter thread,
which loops until `close()` sets its flag: a call that only the normal end of `main()` makes.
"""

import argparse
import threading
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset


class ThroughputReporter(threading.Thread):
    """Prints samples/s every `interval` seconds while the step counter moves."""

    def __init__(self, interval: float = 1.0) -> None:
        super().__init__(name="throughput")  # HANG: non-daemon
        self.interval = interval
        self.samples = 0
        self._done = False
        self._last = 0

    def run(self) -> None:
        started = time.monotonic()
        while not self._done:  # HANG: reporter-loop
            time.sleep(self.interval)  # HANG: reporter-loop
            if self.samples != self._last:
                rate = self.samples / (time.monotonic() - started)
                print(f"[throughput] {self.samples} samples, {rate:.0f}/s", flush=True)
                self._last = self.samples

    def close(self) -> None:
        self._done = True
        self.join()


class Churn(Dataset):
    def __init__(self, n: int, seed: int, float_labels: bool = False) -> None:
        g = torch.Generator().manual_seed(seed)
        self.x = torch.randn(n, 32, generator=g)
        w = torch.randn(32, 3, generator=g)
        labels = (self.x @ w).argmax(1)
        self.y = labels.float() if float_labels else labels

    def __len__(self) -> int:
        return len(self.x)

    def __getitem__(self, i):
        return self.x[i], self.y[i]


def evaluate(model: nn.Module, loader: DataLoader) -> float:
    model.eval()
    total, count = 0.0, 0
    with torch.no_grad():
        for xb, yb in loader:
            loss = nn.functional.cross_entropy(model(xb), yb)  # HANG: raise
            total += loss.item() * len(xb)
            count += len(xb)
    model.train()
    return total / count


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--batch-size", type=int, default=64)
    args = parser.parse_args()
    torch.manual_seed(0)
    train = DataLoader(Churn(4_000, seed=0), batch_size=args.batch_size, shuffle=True)
    # The held-out split comes from the export script, which writes labels as floats.
    val = DataLoader(Churn(2_000, seed=1, float_labels=True), batch_size=256)
    model = nn.Sequential(nn.Linear(32, 128), nn.ReLU(), nn.Linear(128, 3))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    reporter = ThroughputReporter()
    reporter.start()
    for epoch in range(args.epochs):
        for xb, yb in train:
            loss = nn.functional.cross_entropy(model(xb), yb)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            reporter.samples += len(xb)
        print(f"epoch {epoch} train loss {loss.item():.4f}", flush=True)
        if epoch % 2 == 1:
            print(f"epoch {epoch} val loss {evaluate(model, val):.4f}", flush=True)
    reporter.close()
    print("done", flush=True)


if __name__ == "__main__":
    main()
