"""Regression training that ships its metrics through a background uploader flushed at exit.

Written from https://github.com/dbt-labs/dbt-core/issues/5602 ("Execution of job_queue.join
hangs with exceptions"): the uploader thread dies on the first record it cannot serialise
(a gradient norm logged as a tensor), so `task_done()` is never called for it or for anything
queued after it. Training finishes normally; then the atexit flush waits in `Queue.join()` for
a consumer that is gone.
"""

import argparse
import atexit
import json
import queue
import threading
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


class MetricsUploader:
    """Ships metric records in the background (to a JSON-lines file the tracker tails)."""

    def __init__(self, path: str) -> None:
        self.records: queue.Queue = queue.Queue()
        self.sink = open(path, "w")  # noqa: SIM115 (open for the uploader's lifetime)
        self.thread = threading.Thread(target=self._ship, name="metrics-uploader", daemon=True)
        self.thread.start()
        atexit.register(self.flush)

    def log(self, **metrics) -> None:
        self.records.put({"time": time.time(), **metrics})

    def _ship(self) -> None:
        while True:
            record = self.records.get()
            self.sink.write(json.dumps(record) + "\n")  # HANG: serialize
            self.sink.flush()
            self.records.task_done()

    def flush(self) -> None:
        print(f"[uploader] flushing {self.records.qsize()} pending records", flush=True)
        self.records.join()  # HANG: flush-join
        self.sink.close()
        print("[uploader] done", flush=True)


def make_data(n: int = 3000) -> TensorDataset:
    g = torch.Generator().manual_seed(0)
    x = torch.randn(n, 20, generator=g)
    y = x @ torch.randn(20, 1, generator=g) + 0.1 * torch.randn(n, 1, generator=g)
    return TensorDataset(x, y)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--log-every", type=int, default=25)
    args = parser.parse_args()
    torch.set_num_threads(1)  # CPU box shared with the data jobs
    torch.manual_seed(0)
    uploader = MetricsUploader("metrics.jsonl")
    loader = DataLoader(make_data(), batch_size=32, shuffle=True)
    model = nn.Sequential(nn.Linear(20, 16), nn.ReLU(), nn.Linear(16, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    step = 0
    for epoch in range(args.epochs):
        for x, y in loader:
            loss = nn.functional.mse_loss(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            grad_norm = nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
            optimizer.step()
            step += 1
            if step % args.log_every == 0:
                uploader.log(step=step, loss=loss.item(), grad_norm=grad_norm)  # HANG: tensor
        print(f"epoch {epoch} loss {loss.item():.4f}", flush=True)
    print("training done", flush=True)


if __name__ == "__main__":
    main()
