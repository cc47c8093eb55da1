"""Single-process training with a background checkpoint thread. The model weights are guarded
by `model_lock` and the optimizer state by `optim_lock`, so that the checkpoint thread can
take a consistent copy of each while training goes on.

Written from https://github.com/jubatus/jubatus/issues/180 ("linear_mixer and server_impl
deadlock": the server took the model write lock and then the mixer's lock, while the mixer
took its own lock and then the model lock): the checkpoint thread takes `model_lock`, writes
the weights, then asks for `optim_lock`; the training step takes `optim_lock` around the
optimizer update and then `model_lock` to refresh its EMA copy of the weights. Each thread
holds the lock the other one wants.
"""

import argparse
import os
import tempfile
import threading
import time

import torch
from torch import nn


class Checkpointer(threading.Thread):
    def __init__(self, model, optimizer, model_lock, optim_lock, directory, every_s) -> None:
        super().__init__(name="checkpointer", daemon=True)
        self.model, self.optimizer = model, optimizer
        self.model_lock, self.optim_lock = model_lock, optim_lock
        self.directory, self.every_s = directory, every_s
        self.saved = 0

    def run(self) -> None:
        while True:
            time.sleep(self.every_s)
            path = os.path.join(self.directory, f"ckpt-{self.saved}")
            with self.model_lock:
                torch.save(self.model.state_dict(), path + ".model.pt")
                time.sleep(0.05)  # let the filesystem catch up before the optimizer file
                with self.optim_lock:  # HANG: ckpt-optim
                    torch.save(self.optimizer.state_dict(), path + ".optim.pt")
            self.saved += 1


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=5000)
    parser.add_argument("--ckpt-every", type=float, default=1.0)
    parser.add_argument("--ema", type=float, default=0.99)
    args = parser.parse_args()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(),
                          nn.Linear(256, 1))
    ema = {k: v.detach().clone() for k, v in model.state_dict().items()}
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    model_lock, optim_lock = threading.Lock(), threading.Lock()
    Checkpointer(model, optimizer, model_lock, optim_lock, tempfile.mkdtemp(prefix="ckpt-"),
                 args.ckpt_every).start()
    w = torch.randn(64, 1)
    for step in range(1, args.steps + 1):
        x = torch.randn(128, 64)
        loss = nn.functional.mse_loss(model(x), torch.tanh(x @ w))
        with optim_lock:
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            with model_lock:  # HANG: train-model
                for k, v in model.state_dict().items():
                    ema[k].mul_(args.ema).add_(v.detach(), alpha=1 - args.ema)
        if step % 50 == 0:
            print(f"step {step} loss {loss.item():.4f}", flush=True)


if __name__ == "__main__":
    main()
