"""DDP training started with torch.multiprocessing.spawn, where validation runs on the ranks
that hold a validation shard (`--val-ranks`, rank 0 only by default) and their losses are
averaged over a process group of just those ranks. That group is created on first use, inside
`if rank in val_ranks:`, so only its members call `dist.new_group`. Every 15 steps all ranks
gather their throughput over a CPU (gloo) group, also created on first use, by every rank.

Written from https://github.com/pytorch/pytorch/issues/25390 ("dist.new_group() failed": each
spawned process called `new_group` only for the sub-group it belonged to and the job got stuck;
the maintainer pointed to the documented rule that every process of the job must enter
`new_group`, members or not). In current PyTorch the members-only call itself returns (the
barrier after group creation is off by default), but it advances the group counter on rank 0
only: the next group, which every rank creates, gets a different name on each rank, and both
ranks wait in its rendezvous for a peer that registers under the other name.
"""

import argparse
import datetime
import socket
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP


class TextClassifier(nn.Module):
    def __init__(self, vocab: int = 500, dim: int = 32, classes: int = 4) -> None:
        super().__init__()
        self.embed = nn.EmbeddingBag(vocab, dim)
        self.head = nn.Sequential(nn.Linear(dim, dim), nn.ReLU(), nn.Linear(dim, classes))

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.head(self.embed(tokens))


def batch(generator: torch.Generator, size: int = 16) -> tuple[torch.Tensor, torch.Tensor]:
    tokens = torch.randint(0, 500, (size, 12), generator=generator)
    return tokens, tokens[:, 0] % 4


def validate(model: nn.Module, group: dist.ProcessGroup, rank: int) -> float:
    g = torch.Generator().manual_seed(1000 + rank)
    model.eval()
    with torch.no_grad():
        losses = [nn.functional.cross_entropy(model(x), y) for x, y in (batch(g) for _ in range(4))]
    model.train()
    loss = torch.stack(losses).mean()
    dist.all_reduce(loss, group=group)
    return loss.item() / dist.get_world_size(group)


def train(rank: int, world_size: int, init_method: str, args: argparse.Namespace) -> None:
    dist.init_process_group("gloo", init_method=init_method, rank=rank, world_size=world_size,
                            timeout=datetime.timedelta(minutes=30))
    torch.manual_seed(0)
    model = DDP(TextClassifier())
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(rank)
    val_ranks = [int(r) for r in args.val_ranks.split(",")]
    val_group = stats_group = None
    started = time.perf_counter()

    for step in range(1, args.steps + 1):
        tokens, labels = batch(g)
        loss = nn.functional.cross_entropy(model(tokens), labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(f"rank {rank} step {step} loss {loss.item():.4f}", flush=True)

        if step % args.val_every == 0 and rank in val_ranks:
            if val_group is None:
                val_group = dist.new_group(ranks=val_ranks)  # HANG: new_group
            val_loss = validate(model.module, val_group, rank)
            print(f"rank {rank} step {step} val_loss {val_loss:.4f}", flush=True)

        if step % args.log_every == 0:
            if stats_group is None:
                stats_group = dist.new_group(backend="gloo")  # HANG: stats-group
            rates = [None] * world_size
            dist.all_gather_object(rates, step / (time.perf_counter() - started),
                                   group=stats_group)
            if rank == 0:
                print(f"step {step} steps/s per rank {[round(r, 1) for r in rates]}", flush=True)

    dist.destroy_process_group()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--world-size", type=int, default=2)
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--val-every", type=int, default=10)
    parser.add_argument("--val-ranks", default="0")
    parser.add_argument("--log-every", type=int, default=15)
    args = parser.parse_args()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        init_method = f"tcp://127.0.0.1:{s.getsockname()[1]}"
    mp.spawn(train, args=(args.world_size, init_method, args), nprocs=args.world_size)


if __name__ == "__main__":
    main()
