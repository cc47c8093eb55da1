"""Each DataLoader worker decodes samples into a growing in-memory cache. One worker's memory
crosses the container's limit and the kernel kills it with SIGKILL (done here by the worker
itself, as the OOM killer would)."""

import os
import signal
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

MEMORY_LIMIT_BYTES = 3 * 2**20


class DecodedDataset(Dataset):
    def __init__(self, size: int = 256) -> None:
        self.size = size
        self.cache: dict[int, torch.Tensor] = {}

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, index: int):
        time.sleep(0.02)  # decoding
        decoded = self.cache.setdefault(index, torch.randn(64, 256))
        used = sum(t.numel() * t.element_size() for t in self.cache.values())
        if used > MEMORY_LIMIT_BYTES:
            os.kill(os.getpid(), signal.SIGKILL)  # what the OOM killer does
        return decoded.mean(0)[:16], decoded.mean(0)[16:17]


def main() -> None:
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    loader = DataLoader(DecodedDataset(), batch_size=8, num_workers=2)
    for step, (x, y) in enumerate(loader):
        loss = nn.functional.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(f"step {step} loss {loss.item():.4f}", flush=True)


if __name__ == "__main__":
    main()
