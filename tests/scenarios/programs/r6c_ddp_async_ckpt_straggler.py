"""Regression MLP under DDP (torchrun) with asynchronous checkpointing on rank 0.

Written from https://github.com/NVIDIA/Megatron-LM/issues/6970: a failure in the async
checkpoint worker is never propagated; the worker dies without publishing its completion record
and the training process, finalizing the previous save before scheduling the next one, waits for
that record forever. Here rank 0's writer thread dies on torch.save (the step folder was never
created), rank 0 blocks in `done.get()` outside any collective, and rank 1 waits for it in DDP's
gradient all-reduce of the next step.
"""

import argparse
import queue
import threading
from pathlib import Path

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


class AsyncCheckpointer:
    """Writes checkpoints on a background thread so that training keeps going."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.root.mkdir(parents=True, exist_ok=True)
        self.jobs: queue.Queue = queue.Queue()
        self.done: queue.Queue = queue.Queue()
        self.pending = 0
        self.thread = threading.Thread(target=self._writer, name="ckpt-writer", daemon=True)
        self.thread.start()

    def _writer(self) -> None:
        while True:
            step, state = self.jobs.get()
            path = self.root / f"step_{step:06d}" / "model.pt"
            torch.save(state, path)  # HANG: writer-dies
            self.done.put(step)

    def maybe_finalize(self, blocking: bool) -> None:
        while self.pending:
            try:
                step = self.done.get() if blocking else self.done.get_nowait()  # HANG: finalize
            except queue.Empty:
                return
            self.pending -= 1
            print(f"[ckpt] step {step} written", flush=True)

    def schedule(self, step: int, model: nn.Module, optimizer) -> None:
        self.maybe_finalize(blocking=True)  # one save in flight at a time
        state = {"model": {k: v.detach().clone() for k, v in model.state_dict().items()},
                 "optimizer": optimizer.state_dict(), "step": step}
        self.jobs.put((step, state))
        self.pending += 1


def make_data(n: int = 4096):
    g = torch.Generator().manual_seed(3)
    x = torch.randn(n, 16, generator=g)
    w = torch.randn(16, 1, generator=g)
    return TensorDataset(x, x @ w + 0.1 * torch.randn(n, 1, generator=g))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--save-every", type=int, default=15)
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--ckpt-dir", type=Path, default=Path("checkpoints"))
    args = parser.parse_args()
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    data = make_data()
    loader = DataLoader(data, batch_size=32, sampler=DistributedSampler(data))
    model = DDP(nn.Sequential(nn.Linear(16, 64), nn.Tanh(), nn.Linear(64, 1)))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    ckpt = AsyncCheckpointer(args.ckpt_dir) if rank == 0 else None
    step = 0
    for epoch in range(args.epochs):
        loader.sampler.set_epoch(epoch)
        for x, y in loader:
            loss = nn.functional.mse_loss(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            step += 1
            if step % 5 == 0:
                print(f"[rank {rank}] epoch {epoch} step {step} loss {loss.item():.4f}", flush=True)
            if ckpt is not None:
                ckpt.maybe_finalize(blocking=False)
                if step % args.save_every == 0:
                    ckpt.schedule(step, model.module, optimizer)
    if ckpt is not None:
        ckpt.maybe_finalize(blocking=True)
    dist.destroy_process_group()
    print(f"[rank {rank}] done after {step} steps", flush=True)


if __name__ == "__main__":
    main()
