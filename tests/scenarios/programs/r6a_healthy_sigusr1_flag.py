"""Healthy control: a SLURM-style SIGUSR1 warning before the time limit triggers a checkpoint,
with a background prefetch thread that is shut down properly.

Written from https://github.com/huggingface/nanotron/pull/392 ("Catch SIGUSR1 10min before
timeout to save ckpt"): the handler only records the request, the loop saves at the next step
boundary and carries on; the prefetch thread puts with a timeout and checks its stop event, and
`close()` drains the queue before joining it. The job receives the signal, saves, and finishes
by itself.
"""

import argparse
import os
import queue
import signal
import threading
import time

import torch
from torch import nn


class Prefetcher:
    def __init__(self, make_batch, depth: int = 4) -> None:
        self.make_batch = make_batch
        self.queue: queue.Queue = queue.Queue(maxsize=depth)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._fill, name="prefetch")
        self.thread.start()

    def _fill(self) -> None:
        while not self.stop.is_set():
            batch = self.make_batch()
            while not self.stop.is_set():
                try:
                    self.queue.put(batch, timeout=0.2)
                    break
                except queue.Full:
                    continue

    def next(self):
        return self.queue.get(timeout=30)

    def close(self) -> None:
        self.stop.set()
        while True:  # unblock a producer parked on a full queue
            try:
                self.queue.get_nowait()
            except queue.Empty:
                break
        self.thread.join(timeout=10)


class CheckpointRequest:
    def __init__(self) -> None:
        self.pending = False

    def __call__(self, signum, frame) -> None:
        self.pending = True


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=150)
    parser.add_argument("--warn-after", type=float, default=3.0)
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    request = CheckpointRequest()
    signal.signal(signal.SIGUSR1, request)
    g = torch.Generator().manual_seed(1)
    w = torch.randn(40, 4, generator=g)

    def make_batch():
        x = torch.randn(64, 40, generator=g)
        return x, (x @ w).argmax(1)

    model = nn.Sequential(nn.Linear(40, 64), nn.ReLU(), nn.Linear(64, 4))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    prefetcher = Prefetcher(make_batch)
    started = time.monotonic()
    # The cluster warns us before the wall-time limit (sbatch --signal=USR1@600).
    threading.Timer(args.warn_after, os.kill, (os.getpid(), signal.SIGUSR1)).start()
    try:
        for step in range(1, args.steps + 1):
            x, y = prefetcher.next()
            loss = nn.functional.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            if request.pending:
                request.pending = False
                torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                            "step": step}, "usr1_checkpoint.pt")
                print(f"SIGUSR1: saved usr1_checkpoint.pt at step {step}", flush=True)
            if step % 10 == 0:
                print(f"step {step} loss {loss.item():.4f} "
                      f"({time.monotonic() - started:.1f} s)", flush=True)
            time.sleep(0.05)  # the real model's step time on this node
    finally:
        prefetcher.close()
    print("finished", flush=True)


if __name__ == "__main__":
    main()
