"""Training logs a heartbeat from a background thread. Before each epoch the trainer waits for
an external device through a C library called with ctypes.PyDLL, which keeps the GIL for the
whole call; the device never signals, and the heartbeat thread cannot run either."""

import ctypes
import threading
import time

import torch
from torch import nn

beats = 0


def heartbeat() -> None:
    global beats
    while True:
        beats += 1
        if beats % 10 == 0:
            print(f"heartbeat {beats}", flush=True)
        time.sleep(0.05)


def wait_for_device(library: ctypes.CDLL) -> None:
    # poll() on no descriptors with no timeout: returns when the device driver signals
    library.poll(None, 0, -1)  # HANG: device


def main() -> None:
    threading.Thread(target=heartbeat, name="heartbeat", daemon=True).start()
    device = ctypes.PyDLL(None)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for epoch in range(5):
        for _ in range(20):
            x = torch.randn(32, 16)
            loss = nn.functional.mse_loss(model(x), x.sum(1, keepdim=True))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        print(f"epoch {epoch} loss {loss.item():.4f}", flush=True)
        time.sleep(0.5)
        wait_for_device(device)


if __name__ == "__main__":
    main()
