"""Fetches pretrained weights from a model server before training. The server accepts the
connection and never answers; the download has no timeout."""

import io
import socket
import urllib.request

import torch
from torch import nn


def fetch_weights(url: str) -> dict:
    with urllib.request.urlopen(url) as response:  # HANG: download
        return torch.load(io.BytesIO(response.read()))


def main() -> None:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)  # an overloaded model server: it queues connections and serves none
    url = f"http://127.0.0.1:{server.getsockname()[1]}/models/mlp-small.pt"
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1))
    print("loading pretrained weights", flush=True)
    model.load_state_dict(fetch_weights(url))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for step in range(50):
        x = torch.randn(32, 16)
        loss = nn.functional.mse_loss(model(x), x.sum(1, keepdim=True))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(f"step {step} loss {loss.item():.4f}", flush=True)


if __name__ == "__main__":
    main()
