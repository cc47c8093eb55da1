"""DataLoader workers hand batches to the trainer through shared memory. /dev/shm fills up and
a worker touching a page of its shared-memory segment gets SIGBUS (raised here by the worker
itself, as the kernel would)."""

import os
import signal
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

SHM_PAGES = 20


class ImageDataset(Dataset):
    def __init__(self, size: int = 256) -> None:
        self.size = size
        self.pages_used = 0

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, index: int):
        time.sleep(0.02)  # decoding
        image = torch.randn(3, 32, 32)
        self.pages_used += 1
        if self.pages_used > SHM_PAGES:
            os.kill(os.getpid(), signal.SIGBUS)  # a write to a page /dev/shm cannot back
        return image.flatten()[:16], image.flatten()[16:17]


def main() -> None:
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    loader = DataLoader(ImageDataset(), batch_size=8, num_workers=2)
    for step, (x, y) in enumerate(loader):
        loss = nn.functional.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(f"step {step} loss {loss.item():.4f}", flush=True)


if __name__ == "__main__":
    main()
