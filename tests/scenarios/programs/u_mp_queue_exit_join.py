"""Single-process training fed by a batch-preparing worker process through a
multiprocessing.Queue; training stops after --max-steps batches.

Written from https://github.com/python/cpython/issues/91594 (a child puts many items on a
Queue, the parent takes one and the program never exits) and the "joining processes that
use queues" warning quoted in python/cpython#73983: the trainer stops at max_steps and
returns, but the worker has already put more batches than the pipe can hold. At exit the
parent joins the (non-daemonic) worker, and the worker cannot exit until its queue's feeder
thread has written everything into a pipe that nobody reads any more.
"""

import argparse
import multiprocessing as mp

import torch
from torch import nn


def prepare_batches(queue: mp.Queue, batches: int, batch_size: int) -> None:
    g = torch.Generator().manual_seed(0)
    for _ in range(batches):
        x = torch.randn(batch_size, 32, generator=g)
        queue.put((x.tolist(), x.sum(1).tolist()))  # HANG: put
    queue.put(None)


class Regressor(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x).squeeze(1)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs-of-data", type=int, default=200)
    parser.add_argument("--max-steps", type=int, default=20)
    args = parser.parse_args()
    queue = mp.Queue()
    worker = mp.Process(target=prepare_batches, args=(queue, args.epochs_of_data, 64))
    worker.start()
    model = Regressor()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    for step in range(args.max_steps):  # HANG: stop-reading
        item = queue.get()
        if item is None:
            break
        x, y = torch.tensor(item[0]), torch.tensor(item[1])
        loss = nn.functional.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(f"step {step} loss {loss.item():.4f}", flush=True)
    torch.save(model.state_dict(), "regressor.pt")
    print("training done", flush=True)


if __name__ == "__main__":
    main()
