"""Character-level language model whose script fills in its own distributed environment.

Written from https://github.com/mit-han-lab/distrifuser/issues/11 (and pytorch/pytorch#49846):
the script sets RANK / WORLD_SIZE itself (`os.environ.setdefault`, WORLD_SIZE from the
number of GPUs it was written for) so that "plain `python train.py` works too". Started with
plain python, no launcher starts rank 1, and rank 0 waits in init_process_group for a peer that
never comes (the store is a file in the run folder, as on a shared file system).
"""

import argparse
import os
from pathlib import Path

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler

NUM_GPUS = 2  # the box this was written for
TEXT = "the quick brown fox jumps over the lazy dog. " * 200


class CharWindows(Dataset):
    def __init__(self, text: str, block: int) -> None:
        self.vocab = sorted(set(text))
        self.ids = torch.tensor([self.vocab.index(c) for c in text])
        self.block = block

    def __len__(self) -> int:
        return len(self.ids) - self.block - 1

    def __getitem__(self, i):
        return self.ids[i:i + self.block], self.ids[i + 1:i + self.block + 1]


class CharLM(nn.Module):
    def __init__(self, vocab: int) -> None:
        super().__init__()
        self.emb = nn.Embedding(vocab, 32)
        self.rnn = nn.GRU(32, 64, batch_first=True)
        self.head = nn.Linear(64, vocab)

    def forward(self, x):
        h, _ = self.rnn(self.emb(x))
        return self.head(h)


def setup_distributed(run_dir: Path) -> tuple[int, int]:
    # defaults so that `python train.py` runs without torchrun
    os.environ.setdefault("RANK", "0")
    os.environ.setdefault("LOCAL_RANK", "0")
    os.environ.setdefault("WORLD_SIZE", str(NUM_GPUS))  # HANG: world-size
    rank, world_size = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    store = run_dir / "rendezvous"
    if rank == 0 and store.exists():
        store.unlink()  # a stale store from an earlier run
    print(f"[rank {rank}] joining process group of {world_size} via {store}", flush=True)
    dist.init_process_group("gloo", init_method=f"file://{store.resolve()}",  # HANG: init
                            rank=rank, world_size=world_size)
    return rank, world_size


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--run-dir", type=Path, default=Path("runs/charlm"))
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--block", type=int, default=32)
    args = parser.parse_args()
    args.run_dir.mkdir(parents=True, exist_ok=True)
    rank, _ = setup_distributed(args.run_dir)
    torch.manual_seed(0)
    data = CharWindows(TEXT, args.block)
    loader = DataLoader(data, batch_size=32, sampler=DistributedSampler(data))
    model = DDP(CharLM(len(data.vocab)))
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    for epoch in range(args.epochs):
        loader.sampler.set_epoch(epoch)
        for step, (x, y) in enumerate(loader):
            logits = model(x)
            loss = nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            if step % 20 == 0:
                print(f"[rank {rank}] epoch {epoch} step {step} loss {loss.item():.3f}", flush=True)
    if rank == 0:
        torch.save(model.module.state_dict(), args.run_dir / "charlm.pt")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
