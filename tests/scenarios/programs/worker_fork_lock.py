"""A dataset with an index that a background thread refreshes between epochs. The refresh holds
the index lock while the next epoch's DataLoader forks its workers: each worker gets a copy of
the lock in the held state."""

import threading
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset


class IndexedDataset(Dataset):
    def __init__(self, size: int = 64) -> None:
        self.lock = threading.Lock()
        self.rows = torch.randn(size, 17, generator=torch.Generator().manual_seed(0))
        self.order = list(range(size))

    def __len__(self) -> int:
        return len(self.order)

    def __getitem__(self, index: int):
        with self.lock:  # HANG: index
            row = self.rows[self.order[index]]
        return row[:16], row[16:]

    def refresh_in_background(self) -> threading.Thread:
        started = threading.Event()

        def refresh() -> None:
            with self.lock:
                started.set()
                time.sleep(1.0)  # re-reading the index from storage
                self.order = list(reversed(self.order))

        thread = threading.Thread(target=refresh, name="index-refresh", daemon=True)
        thread.start()
        started.wait()
        return thread


def main() -> None:
    dataset = IndexedDataset()
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    loader = DataLoader(dataset, batch_size=8, num_workers=2, multiprocessing_context="fork")
    step = 0
    for epoch in range(3):
        for x, y in loader:
            loss = nn.functional.mse_loss(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            step += 1
        print(f"epoch {epoch} step {step} loss {loss.item():.4f}", flush=True)
        dataset.refresh_in_background()


if __name__ == "__main__":
    main()
