"""Bag-of-words topic classifier, DDP + ZeroRedundancyOptimizer started with mp.spawn.

Healthy control, written from the fix asked for in https://github.com/pytorch/ignite/issues/2623:
`consolidate_state_dict(to=0)` is called on EVERY rank before rank 0 saves, and the early-stop
decision is made on rank 0 and broadcast (as in ultralytics/yolov5#8345), so all ranks leave the
loop together. The run finishes.
"""

import argparse
import os
import socket
from pathlib import Path

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn
from torch.distributed.optim import ZeroRedundancyOptimizer
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler

VOCAB, TOPICS = 1000, 6


class Documents(Dataset):
    def __init__(self, n: int) -> None:
        g = torch.Generator().manual_seed(21)
        self.topics = torch.randint(0, TOPICS, (n,), generator=g)
        offsets = self.topics * (VOCAB // TOPICS)
        self.tokens = (offsets[:, None] + torch.randint(0, 300, (n, 16), generator=g)) % VOCAB

    def __len__(self) -> int:
        return len(self.topics)

    def __getitem__(self, i):
        return self.tokens[i], self.topics[i]


def worker(rank: int, world_size: int, port: int, args) -> None:
    os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = "127.0.0.1", str(port)
    dist.init_process_group("gloo", rank=rank, world_size=world_size)
    torch.set_num_threads(1)  # two ranks share the CPU cores
    torch.manual_seed(0)
    data = Documents(512)
    loader = DataLoader(data, batch_size=32, sampler=DistributedSampler(data))
    model = DDP(nn.Sequential(nn.EmbeddingBag(VOCAB, 32), nn.Linear(32, 32), nn.ReLU(),
                              nn.Linear(32, TOPICS)))
    optimizer = ZeroRedundancyOptimizer(model.parameters(), optimizer_class=torch.optim.Adam,
                                        lr=5e-3)
    args.out.mkdir(exist_ok=True)
    best, step = float("inf"), 0
    for epoch in range(args.epochs):
        loader.sampler.set_epoch(epoch)
        total = torch.zeros(2)
        for tokens, topics in loader:
            loss = nn.functional.cross_entropy(model(tokens), topics)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            step += 1
            total += torch.tensor([loss.item(), 1.0])
            if step % 3 == 0:
                print(f"[rank {rank}] epoch {epoch} step {step} loss {loss.item():.4f}", flush=True)
        # checkpoint: every rank takes part in the consolidation, rank 0 writes
        optimizer.consolidate_state_dict(to=0)
        if rank == 0:
            torch.save({"model": model.module.state_dict(), "optimizer": optimizer.state_dict()},
                       args.out / f"epoch{epoch}.pt")
        # early stopping: rank 0 decides on the global mean loss, everyone follows
        dist.all_reduce(total)
        epoch_loss = float(total[0] / total[1])
        stop = torch.tensor([0])
        if rank == 0:
            stop[0] = int(epoch_loss > best - 1e-3)
            best = min(best, epoch_loss)
        dist.broadcast(stop, src=0)
        print(f"[rank {rank}] epoch {epoch} mean loss {epoch_loss:.4f} stop={bool(stop)}",
              flush=True)
        if stop.item():
            break
    dist.barrier()
    dist.destroy_process_group()
    print(f"[rank {rank}] finished after {step} steps", flush=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--out", type=Path, default=Path("zero_ckpt"))
    args = parser.parse_args()
    mp.spawn(worker, args=(2, free_port(), args), nprocs=2, join=True)
