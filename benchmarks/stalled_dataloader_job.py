"""A CPU torch job that hangs the way real ones do: one DataLoader worker blocks forever in
__getitem__, so the main process waits for data while all workers stay alive.

It is the benchmark target for bench_dump.py: a realistic tree (1 main + N workers, each a full
torch interpreter) to time `hangdoctor dump` against. Usage:

    python stalled_dataloader_job.py [WORKERS] [MAX_SECONDS] [THREADS_PER_WORKER]

It prints READY (flushed) once the workers run and the stalling worker is stuck. It never
outlives MAX_SECONDS (default 600), nor its parent, so a crashed benchmark leaves nothing behind.
"""

from __future__ import annotations

import os
import sys
import threading
import time

import torch
from torch.utils.data import DataLoader, Dataset

BATCH_SIZE = 4
GOOD_BATCHES = 3  # batches the main process gets before the stall
STALL_INDEX = GOOD_BATCHES * BATCH_SIZE  # first item of the batch that never arrives
READY_TIMEOUT_S = 120.0


class StallingDataset(Dataset):
    """Small tensors, except that item STALL_INDEX never returns, like a read from a dead
    network mount would."""

    def __init__(
        self, length: int, stalled: threading.Event, parent_pid: int, deadline: float
    ) -> None:
        self.length = length
        self.stalled = stalled
        self.parent_pid = parent_pid
        self.deadline = deadline

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, index: int) -> torch.Tensor:
        if index == STALL_INDEX:
            self.stalled.set()
            # Sleep in a loop rather than forever, so the stuck worker still exits when the
            # main process dies or the job's time is up (DataLoader's own watchdog never runs
            # while __getitem__ blocks).
            while os.getppid() == self.parent_pid and time.time() < self.deadline:
                time.sleep(0.5)
            os._exit(1)
        return torch.full((16,), float(index))


def _start_idle_threads(count: int) -> None:
    """Threads that wait forever, as a worker's decoding or prefetching threads do between
    items: the capture has to read every one of them."""
    forever = threading.Event()
    for index in range(count):
        threading.Thread(target=forever.wait, name=f"decode-{index}", daemon=True).start()


def _exit_at(deadline: float) -> None:
    """Backstop for the main process: leave even if nobody kills us."""
    time.sleep(max(0.0, deadline - time.time()))
    os._exit(2)


def main(argv: list[str]) -> int:
    """Run until killed; returns only on failure."""
    workers = int(argv[1]) if len(argv) > 1 else 8
    max_seconds = float(argv[2]) if len(argv) > 2 else 600.0
    threads_per_worker = int(argv[3]) if len(argv) > 3 else 1
    if workers < 1:
        print("need at least one worker", file=sys.stderr)
        return 2
    deadline = time.time() + max_seconds
    threading.Thread(target=_exit_at, args=(deadline,), daemon=True, name="exit-at").start()

    # A multiprocessing event, so the worker that stalls can tell the main process.
    import multiprocessing

    stalled = multiprocessing.get_context("fork").Event()
    dataset = StallingDataset(BATCH_SIZE * workers * 8, stalled, os.getpid(), deadline)
    extra_threads = max(0, threads_per_worker - 1)
    loader = DataLoader(
        dataset,
        batch_size=BATCH_SIZE,
        num_workers=workers,
        multiprocessing_context="fork",
        persistent_workers=False,
        worker_init_fn=lambda _: _start_idle_threads(extra_threads),
    )
    batches = iter(loader)
    for _ in range(GOOD_BATCHES):
        next(batches)
    if not stalled.wait(READY_TIMEOUT_S):
        print("the stalling worker never started", file=sys.stderr)
        return 1
    print("READY", flush=True)
    next(batches)  # blocks: this batch holds STALL_INDEX
    print("the stalled batch arrived, which should not happen", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
