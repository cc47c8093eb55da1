"""A GPU training job whose DataLoader worker blocks reading a socket that never answers (a
dataset streaming from a server that accepted the connection and went silent)."""

import socket
import sys

import torch
from _common import device, exit_after
from torch.utils.data import DataLoader, Dataset

GOOD_ITEMS = 64


class Streamed(Dataset):
    def __init__(self, port: int) -> None:
        self.port = port

    def __len__(self) -> int:
        return 10_000

    def __getitem__(self, index: int) -> torch.Tensor:
        if index < GOOD_ITEMS:
            return torch.randn(32)
        with socket.create_connection(("127.0.0.1", self.port)) as stream:
            stream.sendall(b"GET %d\n" % index)
            return torch.frombuffer(bytearray(stream.recv(128)), dtype=torch.float32)  # HANG: recv


if __name__ == "__main__":
    exit_after()
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(64)  # never accepts: the handshake completes, nobody ever answers
    on = device()
    model = torch.nn.Linear(32, 1).to(on)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    loader = DataLoader(Streamed(server.getsockname()[1]), batch_size=16, num_workers=2)
    for step, batch in enumerate(loader):
        optimizer.zero_grad()
        loss = model(batch.to(on)).square().mean()
        loss.backward()
        optimizer.step()
        print(f"step {step} loss {loss.item():.4f}", flush=True)
    sys.exit(1)
