"""mp.spawn DDP regression job whose rank 0 shares its run state, scheduler included.

From https://github.com/AlibabaResearch/AdvancedLiterateMachinery/issues/45 ("Can't pickle
local object 'linear_scheduler.<locals>.lr_lambda'" as soon as the job trains on several
GPUs). After each epoch rank 0 broadcasts the run state (epoch, best validation loss and the
LambdaLR scheduler) with broadcast_object_list so that every rank resumes alike; pickling the
scheduler's local lr_lambda raises on rank 0 while rank 1 waits in the same broadcast.
"""

import datetime
import socket

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.optim.lr_scheduler import LambdaLR
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler

WORLD_SIZE = 2
EPOCHS = 3
BATCH_SIZE = 16
WARMUP_STEPS = 10


class SyntheticRegression(Dataset):
    def __init__(self, n=512, features=20):
        g = torch.Generator().manual_seed(1)
        self.x = torch.randn(n, features, generator=g)
        w = torch.randn(features, 1, generator=g)
        self.y = self.x @ w + 0.1 * torch.randn(n, 1, generator=g)

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return self.x[i], self.y[i]


def linear_scheduler(optimizer, warmup_steps, total_steps):
    def lr_lambda(step):
        if step < warmup_steps:
            return (step + 1) / warmup_steps
        return max(0.0, (total_steps - step) / max(1, total_steps - warmup_steps))

    return LambdaLR(optimizer, lr_lambda)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def worker(rank, world_size, port):
    dist.init_process_group(
        "gloo",
        init_method=f"tcp://127.0.0.1:{port}",
        rank=rank,
        world_size=world_size,
        timeout=datetime.timedelta(minutes=10),
    )
    torch.manual_seed(0)
    train_set = SyntheticRegression()
    val_set = SyntheticRegression(n=128)
    sampler = DistributedSampler(train_set)
    loader = DataLoader(train_set, batch_size=BATCH_SIZE, sampler=sampler)

    model = DDP(nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 1)))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    scheduler = linear_scheduler(optimizer, WARMUP_STEPS, EPOCHS * len(loader))
    best_val = float("inf")

    for epoch in range(EPOCHS):
        sampler.set_epoch(epoch)
        model.train()
        for step, (x, y) in enumerate(loader):
            loss = F.mse_loss(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            scheduler.step()
            print(f"[rank {rank}] epoch {epoch} step {step} loss {loss.item():.4f}", flush=True)

        model.eval()
        with torch.no_grad():
            val_loss = F.mse_loss(model(val_set.x), val_set.y).item()
        best_val = min(best_val, val_loss)

        # rank 0 owns the run state; every rank takes it over so that a restart resumes alike
        run_state = [None]
        if rank == 0:
            run_state[0] = {"epoch": epoch, "best_val": best_val}
            run_state[0]["scheduler"] = scheduler  # HANG: unpicklable-state
        dist.broadcast_object_list(run_state, src=0)  # HANG: share-state
        print(
            f"[rank {rank}] epoch {epoch} val {val_loss:.4f} best {run_state[0]['best_val']:.4f}",
            flush=True,
        )

    dist.destroy_process_group()


if __name__ == "__main__":
    mp.spawn(worker, args=(WORLD_SIZE, free_port()), nprocs=WORLD_SIZE, join=True)
