"""Healthy control: training with an asynchronous checkpoint writer, a thread pool for
augmentation and a SIGTERM handler that only sets a flag.

Written from https://github.com/huggingface/transformers/pull/41723 (asynchronous checkpoints
taken on SIGTERM): everything that hangs elsewhere in this corpus is done the safe way here.
The writer thread gets a sentinel and is joined in `finally`, the handler never takes a lock or
does I/O (the loop checks its flag between steps), and the pool is left with nothing pending.
Output every couple of seconds; it finishes by itself.
"""

import argparse
import os
import queue
import signal
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import torch
from torch import nn


class AsyncCheckpointer:
    def __init__(self, directory: str) -> None:
        self.directory = directory
        self.queue: queue.Queue = queue.Queue()
        self.thread = threading.Thread(target=self._write, name="ckpt-writer")
        self.thread.start()

    def _write(self) -> None:
        while True:
            item = self.queue.get()
            try:
                if item is None:
                    return
                step, state = item
                path = os.path.join(self.directory, f"ckpt_{step:05d}.pt")
                torch.save(state, path + ".tmp")
                os.replace(path + ".tmp", path)
                print(f"[ckpt] wrote {path}", flush=True)
            finally:
                self.queue.task_done()

    def save(self, step: int, model: nn.Module, optimizer: torch.optim.Optimizer) -> None:
        state = {"model": {k: v.detach().clone() for k, v in model.state_dict().items()},
                 "optimizer": optimizer.state_dict(), "step": step}
        self.queue.put((step, state))

    def close(self) -> None:
        self.queue.put(None)
        self.thread.join()


class StopFlag:
    def __init__(self) -> None:
        self.requested = False

    def __call__(self, signum, frame) -> None:
        self.requested = True  # acted on between steps, never inside the handler


def augment(chunk: torch.Tensor) -> torch.Tensor:
    noise = torch.randn_like(chunk) * 0.05
    return torch.roll(chunk, shifts=1, dims=1) + noise


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=90)
    parser.add_argument("--ckpt-every", type=int, default=30)
    parser.add_argument("--out", default="checkpoints")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    torch.set_num_threads(1)
    torch.manual_seed(0)
    stop = StopFlag()
    signal.signal(signal.SIGTERM, stop)
    model = nn.Sequential(nn.Linear(48, 96), nn.Tanh(), nn.Linear(96, 1))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(1)
    target_w = torch.randn(48, 1, generator=g)
    checkpointer = AsyncCheckpointer(args.out)
    last_print = time.monotonic()
    try:
        with ThreadPoolExecutor(max_workers=2, thread_name_prefix="augment") as pool:
            for step in range(1, args.steps + 1):
                x = torch.randn(128, 48, generator=g)
                x = torch.cat(list(pool.map(augment, x.chunk(4))))
                loss = nn.functional.mse_loss(model(x), x @ target_w)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                if step % args.ckpt_every == 0:
                    checkpointer.save(step, model, optimizer)
                if time.monotonic() - last_print > 1.0 or step == args.steps:
                    print(f"step {step} loss {loss.item():.4f}", flush=True)
                    last_print = time.monotonic()
                if stop.requested:
                    print(f"SIGTERM: checkpointing at step {step} and stopping", flush=True)
                    checkpointer.save(step, model, optimizer)
                    break
    finally:
        checkpointer.close()
    print("training finished", flush=True)


if __name__ == "__main__":
    main()
