"""Bag-of-words topic classifier, DDP + ZeroRedundancyOptimizer under torchrun.

Written from https://github.com/pytorch/ignite/issues/2623 (and the review of pytorch/pytorch#60285:
"users might call .state_dict() on one rank only (in practice they often will)"): with ZeRO,
each rank holds a shard of the optimizer state and `consolidate_state_dict(to=0)` is a
collective that every rank must call before rank 0 can save the whole state. The checkpoint
helper calls it inside `if rank == 0:`, so rank 0 waits in the consolidation's broadcast while
rank 1 has gone on to the next step and waits in DDP's gradient all-reduce.
"""

import argparse
from pathlib import Path

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.optim import ZeroRedundancyOptimizer
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler

VOCAB, TOPICS = 2000, 8


class Documents(Dataset):
    def __init__(self, n: int) -> None:
        g = torch.Generator().manual_seed(21)
        self.topics = torch.randint(0, TOPICS, (n,), generator=g)
        offsets = self.topics * (VOCAB // TOPICS)
        self.tokens = (offsets[:, None] + torch.randint(0, 400, (n, 24), generator=g)) % VOCAB

    def __len__(self) -> int:
        return len(self.topics)

    def __getitem__(self, i):
        return self.tokens[i], self.topics[i]


class TopicModel(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.bag = nn.EmbeddingBag(VOCAB, 64, mode="mean")
        self.mlp = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, TOPICS))

    def forward(self, tokens):
        return self.mlp(self.bag(tokens))


def save_checkpoint(path: Path, model: DDP, optimizer: ZeroRedundancyOptimizer, step: int) -> None:
    optimizer.consolidate_state_dict(to=0)  # HANG: consolidate
    torch.save({"model": model.module.state_dict(), "optimizer": optimizer.state_dict(),
                "step": step}, path)
    print(f"[rank 0] saved {path}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--save-every", type=int, default=12)
    parser.add_argument("--out", type=Path, default=Path("zero_ckpt"))
    args = parser.parse_args()
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    data = Documents(2048)
    loader = DataLoader(data, batch_size=32, sampler=DistributedSampler(data))
    model = DDP(TopicModel())
    optimizer = ZeroRedundancyOptimizer(model.parameters(), optimizer_class=torch.optim.Adam,
                                        lr=1e-3)
    args.out.mkdir(exist_ok=True)
    step = 0
    for epoch in range(args.epochs):
        loader.sampler.set_epoch(epoch)
        for tokens, topics in loader:
            loss = nn.functional.cross_entropy(model(tokens), topics)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            step += 1
            if step % 4 == 0:
                print(f"[rank {rank}] epoch {epoch} step {step} loss {loss.item():.4f}", flush=True)
            if step % args.save_every == 0 and rank == 0:  # HANG: rank0-only
                save_checkpoint(args.out / f"step{step}.pt", model, optimizer, step)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
