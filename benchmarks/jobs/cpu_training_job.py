"""A small, seeded CPU training job: an MLP on random data through a DataLoader with 2 workers.

The target of bench_run_overhead.py, which runs it directly and under `hangdoctor run` and
compares wall times and the final loss. Everything is deterministic (seeded model, data made
from each item's index, fixed torch thread count), so the final loss must be bit-identical
whether or not hangdoctor watches the job. Usage:

    python cpu_training_job.py [--steps 300] [--print-every 25] [--threads 1]

It prints `step N loss X` every --print-every steps, then `final loss X` (repr of the float),
`train seconds` (the training loop) and `job seconds` (from before `import torch` to the
end), and never outlives --max-seconds (default 600) nor its parent.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time

STARTED = time.perf_counter()  # before importing torch: the job's own time starts here

import torch  # noqa: E402
from torch import nn  # noqa: E402
from torch.utils.data import DataLoader, Dataset  # noqa: E402

FEATURES = 256
CLASSES = 10
BATCH_SIZE = 128
SEED = 1234


class RandomDataset(Dataset):
    """Random inputs and labels, each item made from its own index: the same data whichever
    worker builds it and in whichever process."""

    def __init__(self, length: int) -> None:
        self.length = length

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        generator = torch.Generator().manual_seed(SEED * 1_000_003 + index)
        x = torch.randn(FEATURES, generator=generator)
        y = torch.randint(CLASSES, (), generator=generator)
        return x, y


def _exit_at(deadline: float, parent: int) -> None:
    """Backstop: leave when the time is up or the parent (the benchmark) is gone."""
    while time.time() < deadline and os.getppid() == parent:
        time.sleep(1.0)
    os._exit(2)


def main(argv: list[str] | None = None) -> int:
    """Train for a fixed number of steps; print progress and the final loss."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--print-every", type=int, default=25)
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads")
    parser.add_argument("--max-seconds", type=float, default=600.0)
    args = parser.parse_args(argv)
    threading.Thread(
        target=_exit_at,
        args=(time.time() + args.max_seconds, os.getppid()),
        daemon=True,
        name="exit-at",
    ).start()

    torch.manual_seed(SEED)
    torch.set_num_threads(args.threads)
    model = nn.Sequential(
        nn.Linear(FEATURES, 1024),
        nn.ReLU(),
        nn.Linear(1024, 1024),
        nn.ReLU(),
        nn.Linear(1024, 512),
        nn.ReLU(),
        nn.Linear(512, CLASSES),
    )
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    dataset = RandomDataset(args.steps * BATCH_SIZE)
    loader = DataLoader(
        dataset,
        batch_size=BATCH_SIZE,
        shuffle=True,
        num_workers=2,
        generator=torch.Generator().manual_seed(SEED),
        multiprocessing_context="fork",
        persistent_workers=False,
    )
    started = time.perf_counter()
    loss = torch.tensor(float("nan"))
    for step, (x, y) in enumerate(loader, start=1):
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        if step % args.print_every == 0:
            print(f"step {step} loss {loss.item():.6f}", flush=True)
    print(f"final loss {loss.item()!r}", flush=True)
    print(f"train seconds {time.perf_counter() - started:.3f}", flush=True)
    print(f"job seconds {time.perf_counter() - STARTED:.3f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
