"""Threaded shard training: worker threads read and collate their own shards, update one
shared model (the update itself under a lock), and meet at a barrier at the end of every epoch,
where one of them evaluates.

Written from https://github.com/h2oai/datatable/pull/2521 ("Fix deadlock in barrier when an
exception occurs": "some of the threads arrive at a barrier, while some other thread throws an
exception... the threads at a barrier will be left waiting forever"): one shard holds a
truncated record, so that worker's batch collation raises and its thread dies. The others wait
in `Barrier.wait()` (no timeout) for a party that will never come; the main thread joins them.
"""

import argparse
import threading

import torch
from torch import nn


def make_shards(n_workers: int, rows: int, features: int) -> list[list[torch.Tensor]]:
    g = torch.Generator().manual_seed(0)
    shards = [[torch.randn(features + 1, generator=g) for _ in range(rows)]
              for _ in range(n_workers)]
    shards[2][37] = shards[2][37][:-2]  # a row the CSV exporter cut short
    return shards


def batches(shard: list[torch.Tensor], batch_size: int):
    for i in range(0, len(shard), batch_size):
        rows = torch.stack(shard[i:i + batch_size])  # HANG: raise
        yield rows[:, :-1], rows[:, -1:]


class HogwildTrainer:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.model = nn.Sequential(nn.Linear(args.features, 32), nn.ReLU(), nn.Linear(32, 1))
        self.shards = make_shards(args.workers, args.rows, args.features)
        self.update_lock = threading.Lock()  # autograd saves the weights; step() edits them
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.01)
        self.epoch_end = threading.Barrier(args.workers, action=self.report)
        self.epoch = 0

    def report(self) -> None:
        with torch.no_grad():
            x, y = next(batches(self.shards[0], 256))
            loss = nn.functional.mse_loss(self.model(x), y).item()
        print(f"epoch {self.epoch} shared-model loss {loss:.4f}", flush=True)
        self.epoch += 1

    def worker(self, rank: int) -> None:
        for _ in range(self.args.epochs):
            for x, y in batches(self.shards[rank], self.args.batch_size):
                with self.update_lock:
                    loss = nn.functional.mse_loss(self.model(x), y)
                    self.optimizer.zero_grad()
                    loss.backward()
                    self.optimizer.step()
            self.epoch_end.wait()  # HANG: barrier

    def run(self) -> None:
        threads = [threading.Thread(target=self.worker, args=(r,), name=f"shard-worker-{r}")
                   for r in range(self.args.workers)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()  # HANG: join
        print("training finished", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--rows", type=int, default=400)
    parser.add_argument("--features", type=int, default=24)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--epochs", type=int, default=5)
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    HogwildTrainer(args).run()


if __name__ == "__main__":
    main()
