"""Trains on samples of which the first ones are on local disk and the rest come from a blob
store over HTTP. The blob store accepts connections but sends nothing back, and the dataset reads
without a timeout, in a DataLoader worker."""

import socket
import urllib.request

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

LOCAL_SAMPLES = 32


class BlobDataset(Dataset):
    def __init__(self, base_url: str, size: int = 256) -> None:
        self.base_url = base_url
        self.size = size
        generator = torch.Generator().manual_seed(0)
        self.local = torch.randn(LOCAL_SAMPLES, 17, generator=generator)

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, index: int):
        if index < LOCAL_SAMPLES:
            row = self.local[index]
        else:
            payload = urllib.request.urlopen(f"{self.base_url}/{index}.bin").read()  # HANG: read
            row = torch.frombuffer(bytearray(payload), dtype=torch.float32)
        return row[:16], row[16:]


def main() -> None:
    store = socket.socket()
    store.bind(("127.0.0.1", 0))
    store.listen(64)  # the store's front end: connections queue up, nobody serves them
    url = f"http://127.0.0.1:{store.getsockname()[1]}/shard-0"

    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    loader = DataLoader(BlobDataset(url), batch_size=8, num_workers=2)
    for step, (x, y) in enumerate(loader):
        loss = nn.functional.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(f"step {step} loss {loss.item():.4f}", flush=True)


if __name__ == "__main__":
    main()
