"""Two gloo ranks, each training with a DataLoader of 2 workers, until rank 1's data stalls.

The target of bench_run_detection.py. Run it with

    python -m torch.distributed.run --standalone --nproc_per_node 2 two_rank_stall_job.py \\
        [--good-steps 8] [--max-seconds 600]

Both ranks train a small MLP on random data, averaging gradients with one all_reduce per step.
After --good-steps steps, rank 1's dataset blocks forever in __getitem__ (waiting on an Event
that nobody sets, as a read from a dead mount would), so rank 1 waits for a batch that never
comes and rank 0 waits in the next all_reduce for a rank that never arrives.

For the benchmark, the job records when it stopped making progress, in the folder named by
$STALL_DIR: `blocked` holds time.time() when rank 1's worker starts blocking, and
`progress-rank<R>` the time.time() of rank R's last progress event (a batch received, a
collective entered or left, an optimizer step, a line printed). The stall moment is the
latest of these. No process outlives --max-seconds, nor its parent.
"""

from __future__ import annotations

import argparse
import datetime
import os
import sys
import threading
import time

import torch
import torch.distributed as dist
from torch import nn
from torch.utils.data import DataLoader, Dataset

FEATURES = 64
CLASSES = 4
BATCH_SIZE = 32
STALL_DIR_ENV = "STALL_DIR"


def _write_time(name: str) -> None:
    """time.time() into $STALL_DIR/name, replaced atomically."""
    directory = os.environ.get(STALL_DIR_ENV)
    if not directory:
        return
    path = os.path.join(directory, name)
    temporary = f"{path}.{os.getpid()}.tmp"
    with open(temporary, "w") as handle:
        handle.write(repr(time.time()))
    os.replace(temporary, path)


class StallingDataset(Dataset):
    """Random items made from (rank, index); on the stalling rank, item `stall_index` never
    returns."""

    def __init__(self, rank: int, length: int, stall_index: int | None, deadline: float) -> None:
        self.rank = rank
        self.length = length
        self.stall_index = stall_index
        self.deadline = deadline

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        if index == self.stall_index:
            self._block()
        generator = torch.Generator().manual_seed(self.rank * 1_000_003 + index)
        return torch.randn(FEATURES, generator=generator), torch.randint(
            CLASSES, (), generator=generator
        )

    def _block(self) -> None:
        _write_time("blocked")
        never_set = threading.Event()
        parent = os.getppid()
        # Wait in a loop rather than forever, so the stuck worker still exits when its rank
        # dies or the job's time is up.
        while not never_set.wait(0.5):
            if os.getppid() != parent or time.time() > self.deadline:
                os._exit(1)


def _exit_at(deadline: float, parent: int) -> None:
    """Backstop for a rank: leave when the time is up or the launcher is gone."""
    while time.time() < deadline and os.getppid() == parent:
        time.sleep(0.5)
    os._exit(2)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--good-steps", type=int, default=8)
    parser.add_argument("--max-seconds", type=float, default=600.0)
    args = parser.parse_args(argv)
    deadline = time.time() + args.max_seconds
    threading.Thread(
        target=_exit_at, args=(deadline, os.getppid()), daemon=True, name="exit-at"
    ).start()

    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=args.max_seconds))
    rank, world = dist.get_rank(), dist.get_world_size()
    mark = f"progress-rank{rank}"
    torch.manual_seed(1234)
    torch.set_num_threads(1)
    model = nn.Sequential(nn.Linear(FEATURES, 256), nn.ReLU(), nn.Linear(256, CLASSES))
    params = list(model.parameters())
    optimizer = torch.optim.SGD(params, lr=0.05)
    loss_fn = nn.CrossEntropyLoss()
    stall_index = args.good_steps * BATCH_SIZE if rank == 1 else None
    dataset = StallingDataset(rank, (args.good_steps + 50) * BATCH_SIZE, stall_index, deadline)
    loader = DataLoader(
        dataset, batch_size=BATCH_SIZE, num_workers=2, multiprocessing_context="fork"
    )
    batches = iter(loader)
    for step in range(1, len(loader) + 1):
        x, y = next(batches)  # rank 1 blocks here after --good-steps steps
        _write_time(mark)
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        flat = torch.cat([p.grad.reshape(-1) for p in params])
        _write_time(mark)
        dist.all_reduce(flat)  # rank 0 blocks here at step --good-steps + 1
        _write_time(mark)
        flat /= world
        offset = 0
        for p in params:
            p.grad.copy_(flat[offset : offset + p.numel()].view_as(p))
            offset += p.numel()
        optimizer.step()
        _write_time(mark)
        print(f"rank {rank} step {step} loss {loss.item():.4f}", flush=True)
        _write_time(mark)
    print(f"rank {rank}: the stall never happened", file=sys.stderr)
    dist.destroy_process_group()
    return 1


if __name__ == "__main__":
    sys.exit(main())
