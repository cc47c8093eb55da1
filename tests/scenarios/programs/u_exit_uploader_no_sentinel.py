"""Single-process training that hands each checkpoint to a background "uploader" thread, which
copies it to a (here: local) artifact store so that training does not wait for the copy.

Written from https://github.com/honeycombio/libhoney-py/pull/21 (fixes #20: "libhoney-py <=
1.0.11 causes Python to hang on exit ... if the script didn't call close()"): the sender
threads were non-daemon threads that only stop when close() puts a stop marker on their
queue. Here the training loop ends, prints its final line and returns from main() without
calling `uploader.close()`; at interpreter exit threading waits for the non-daemon uploader
thread, which sits in `queue.get()` for the None that nobody will ever put.
"""

import argparse
import os
import queue
import shutil
import tempfile
import threading

import torch
from torch import nn


class CheckpointUploader:
    def __init__(self, store: str) -> None:
        self.store = store
        self.pending: queue.Queue = queue.Queue()
        self.uploaded = 0
        self.thread = threading.Thread(target=self._run, name="ckpt-uploader")
        self.thread.start()

    def submit(self, path: str) -> None:
        self.pending.put(path)

    def close(self) -> None:
        self.pending.put(None)
        self.thread.join()

    def _run(self) -> None:
        while True:
            path = self.pending.get()  # HANG: get
            if path is None:
                break
            shutil.copy(path, os.path.join(self.store, os.path.basename(path)))
            os.remove(path)
            self.uploaded += 1


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=120)
    parser.add_argument("--save-every", type=int, default=40)
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="train-")
    uploader = CheckpointUploader(tempfile.mkdtemp(prefix="store-"))

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 1))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    w = torch.randn(32, 1)
    for step in range(1, args.steps + 1):
        x = torch.randn(64, 32)
        loss = nn.functional.mse_loss(model(x), x @ w)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % 10 == 0:
            print(f"step {step} loss {loss.item():.4f}", flush=True)
        if step % args.save_every == 0:
            path = os.path.join(work, f"step-{step}.pt")
            torch.save({"model": model.state_dict(), "optim": optimizer.state_dict()}, path)
            uploader.submit(path)
    print(f"training finished after {args.steps} steps, final loss {loss.item():.4f}",
          flush=True)  # HANG: no-close


if __name__ == "__main__":
    main()
