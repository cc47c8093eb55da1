"""Two-rank training, one DataLoader worker per rank. Each rank's dataset reads its samples from
a feature server; rank 1's server stops answering mid-epoch, and the read has no timeout. Rank
0 waits in the gradient all_reduce."""

import socket
import threading
import urllib.request

import torch
import torch.distributed as dist
from torch import nn
from torch.utils.data import DataLoader, Dataset


def serve_features(server: socket.socket, answers: int) -> None:
    """A tiny feature server: answers `answers` requests, then accepts and goes silent."""
    served = 0
    stalled = []
    while True:
        connection, _ = server.accept()
        connection.recv(4096)
        if served >= answers:
            stalled.append(connection)  # keeps the connection open, never replies
            continue
        body = bytes(17 * 4)
        connection.sendall(b"HTTP/1.0 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
        connection.close()
        served += 1


class FeatureDataset(Dataset):
    def __init__(self, base_url: str, size: int = 512) -> None:
        self.base_url = base_url
        self.size = size

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, index: int):
        with urllib.request.urlopen(f"{self.base_url}/{index}") as response:  # HANG: fetch
            row = torch.frombuffer(bytearray(response.read()), dtype=torch.float32)
        return row[:16], row[16:]


def average_gradients(model: nn.Module, world: int) -> None:
    for parameter in model.parameters():
        dist.all_reduce(parameter.grad)  # HANG: grads
        parameter.grad /= world


def main() -> None:
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    answers = 10_000 if rank == 0 else 120
    threading.Thread(target=serve_features, args=(server, answers), daemon=True).start()
    url = f"http://127.0.0.1:{server.getsockname()[1]}/features"
    loader = DataLoader(FeatureDataset(url), batch_size=8, num_workers=1)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for step, (x, y) in enumerate(loader):
        loss = nn.functional.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        average_gradients(model, world)
        optimizer.step()
        print(f"rank {rank} step {step} loss {loss.item():.4f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
