"""A metrics buffer guarded by a lock; when the buffer is full, `record` flushes it, and `flush`
takes the same (non-reentrant) lock again."""

import threading

import torch
from torch import nn


class MetricsBuffer:
    def __init__(self, capacity: int = 25) -> None:
        self.lock = threading.Lock()
        self.capacity = capacity
        self.rows: list[tuple[int, float]] = []
        self.flushed = 0

    def record(self, step: int, loss: float) -> None:
        with self.lock:
            self.rows.append((step, loss))
            if len(self.rows) >= self.capacity:
                self.flush()

    def flush(self) -> None:
        with self.lock:  # HANG: flush
            self.flushed += len(self.rows)
            self.rows.clear()


def main() -> None:
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    metrics = MetricsBuffer()
    generator = torch.Generator().manual_seed(0)
    for step in range(1000):
        x = torch.randn(32, 16, generator=generator)
        loss = nn.functional.mse_loss(model(x), x.sum(1, keepdim=True))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        metrics.record(step, loss.item())
        if step % 5 == 0:
            print(f"step {step} loss {loss.item():.4f}", flush=True)


if __name__ == "__main__":
    main()
