"""DDP job with a wall-clock budget whose handler saves a checkpoint and exits with status 0.

From https://github.com/ai2cm/ace/pull/1068: the trainer's signal handler called `sys.exit(0)`,
so the launcher took the rank for a success and left its siblings to wait in their next
collective. Here only rank 0, which writes the checkpoints, arms a SIGALRM budget; when it
fires rank 0 saves and exits cleanly in the middle of the epoch, and rank 1, inside its next
backward, loses its peer.
"""

import argparse
import datetime
import os
import signal
import sys
import tempfile

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def parse_args():
    p = argparse.ArgumentParser()
    p.add_argument("--epochs", type=int, default=200)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--time-budget-s", type=int, default=6, help="checkpoint and stop after this")
    return p.parse_args()


class TrainState:
    def __init__(self, model, optimizer):
        self.model = model
        self.optimizer = optimizer
        self.epoch = 0
        self.step = 0

    def save(self, path):
        torch.save(
            {
                "model": self.model.module.state_dict(),
                "optim": self.optimizer.state_dict(),
                "epoch": self.epoch,
                "step": self.step,
            },
            path,
        )


def install_time_budget(seconds, state, ckpt_path):
    def on_budget(signum, frame):
        print(f"time budget reached at epoch {state.epoch} step {state.step}, saving", flush=True)
        state.save(ckpt_path)
        sys.exit(0)  # HANG: exit-zero

    signal.signal(signal.SIGALRM, on_budget)
    signal.alarm(seconds)


def main():
    args = parse_args()
    dist.init_process_group("gloo", timeout=datetime.timedelta(minutes=10))
    rank = dist.get_rank()
    torch.manual_seed(0)

    g = torch.Generator().manual_seed(0)
    x = torch.randn(4096, 256, generator=g)
    y = (x[:, :16].sum(1) > 0).long()
    dataset = TensorDataset(x, y)
    sampler = DistributedSampler(dataset)
    loader = DataLoader(dataset, batch_size=args.batch_size, sampler=sampler)

    model = DDP(
        nn.Sequential(
            nn.Linear(256, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 2)
        )
    )
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    state = TrainState(model, optimizer)

    if rank == 0:  # rank 0 writes the checkpoints, so it keeps the time budget
        ckpt_path = os.path.join(tempfile.gettempdir(), "budget_ckpt_last.pt")
        install_time_budget(args.time_budget_s, state, ckpt_path)

    for epoch in range(args.epochs):
        state.epoch = epoch
        sampler.set_epoch(epoch)
        for step, (xb, yb) in enumerate(loader):
            state.step = step
            loss = F.cross_entropy(model(xb), yb)
            optimizer.zero_grad()
            loss.backward()  # HANG: peer-backward
            optimizer.step()
            print(f"[rank {rank}] epoch {epoch} step {step} loss {loss.item():.4f}", flush=True)

    dist.destroy_process_group()


if __name__ == "__main__":
    main()
