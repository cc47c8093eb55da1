"""The training loop updates the model under `model_lock` and its running statistics under
`stats_lock`; a background checkpoint thread snapshots the statistics first, then the model."""

import threading
import time

import torch
from torch import nn

model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
model_lock = threading.Lock()
stats_lock = threading.Lock()
stats = {"steps": 0, "loss_sum": 0.0}


def checkpoint_every(seconds: float) -> None:
    while True:
        time.sleep(seconds)
        with stats_lock:
            snapshot = dict(stats)
            time.sleep(0.05)  # writes the metrics file
            with model_lock:  # HANG: checkpointer
                weights = {k: v.clone() for k, v in model.state_dict().items()}
        torch.save({"stats": snapshot, "model": weights}, "/dev/null")


def train() -> None:
    threading.Thread(target=checkpoint_every, args=(1.0,), name="checkpointer",
                     daemon=True).start()
    generator = torch.Generator().manual_seed(0)
    for step in range(100_000):
        x = torch.randn(32, 16, generator=generator)
        y = x.sum(1, keepdim=True)
        with model_lock:
            loss = nn.functional.mse_loss(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            time.sleep(0.01)
            with stats_lock:  # HANG: trainer
                stats["steps"] += 1
                stats["loss_sum"] += loss.item()
        if step % 20 == 0:
            print(f"step {step} loss {loss.item():.4f}", flush=True)


if __name__ == "__main__":
    train()
