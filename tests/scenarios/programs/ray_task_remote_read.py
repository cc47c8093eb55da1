"""Trains on batches that Ray tasks prepare: each step asks a remote task for the next batch and
waits for it with `ray.get`. The first batches come from local memory, the rest from a feature
store over HTTP that accepts connections but never answers, and the task reads without a timeout,
in a Ray worker process (a child of the raylet that `ray.init` started)."""

import socket
import urllib.request

import numpy as np
import ray
import torch
from torch import nn

LOCAL_BATCHES = 4


@ray.remote
def load_batch(base_url: str, index: int) -> np.ndarray:
    if index < LOCAL_BATCHES:
        return np.random.default_rng(index).standard_normal((8, 17)).astype(np.float32)
    payload = urllib.request.urlopen(f"{base_url}/{index}.bin").read()  # HANG: read
    return np.frombuffer(payload, dtype=np.float32).reshape(8, 17)


def main() -> None:
    store = socket.socket()
    store.bind(("127.0.0.1", 0))
    store.listen(64)  # the store's front end: connections queue up, nobody serves them
    url = f"http://127.0.0.1:{store.getsockname()[1]}/features"

    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=True)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for step in range(100):
        batch = torch.from_numpy(ray.get(load_batch.remote(url, step)))
        x, y = batch[:, :16], batch[:, 16:]
        loss = nn.functional.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(f"step {step} loss {loss.item():.4f}", flush=True)
    ray.shutdown()


if __name__ == "__main__":
    main()
