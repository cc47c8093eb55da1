"""A single-process loader (num_workers=0) whose dataset takes decoded records from a reader
thread through a queue. The reader thread fails on a corrupt record and exits; the dataset
keeps waiting for the next record."""

import queue
import threading

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset


class StreamedDataset(Dataset):
    def __init__(self, size: int = 128) -> None:
        self.size = size
        self.records: queue.Queue = queue.Queue(maxsize=16)
        self.reader = threading.Thread(target=self._read, name="record-reader", daemon=True)
        self.reader.start()

    def _read(self) -> None:
        generator = torch.Generator().manual_seed(0)
        for number in range(self.size):
            if number == 40:
                raise ValueError(f"record {number}: bad checksum")
            self.records.put(torch.randn(17, generator=generator))

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, index: int):
        row = self.records.get()  # HANG: take
        return row[:16], row[16:]


def main() -> None:
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    loader = DataLoader(StreamedDataset(), batch_size=8, num_workers=0)
    for step, (x, y) in enumerate(loader):
        loss = nn.functional.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(f"step {step} loss {loss.item():.4f}", flush=True)


if __name__ == "__main__":
    main()
