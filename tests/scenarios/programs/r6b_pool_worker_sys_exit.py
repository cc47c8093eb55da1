"""Next-token GRU language model over crawled text shards, tokenized in a multiprocessing.Pool.

Written from https://github.com/DaehwanKimLab/hisat-genotype/issues/56 ("indefinite stalling
caused by exit(1) within process"): a helper shared with the command-line tools ends the
program with `sys.exit(...)` on bad input. Called inside a Pool worker, SystemExit is not an
Exception, so the worker's error handling does not send it back as a failed task: the worker
process exits, the pool quietly starts a replacement, and `pool.map` waits for ever for the
result of the task that died with it. One shard of the crawl came back empty.
"""

import argparse
import multiprocessing as mp
import os
import random
import sys

import torch
from torch import nn

VOCAB = ["<pad>", "<unk>"] + [chr(c) for c in range(ord("a"), ord("z") + 1)] + [" ", "."]
STOI = {c: i for i, c in enumerate(VOCAB)}


def read_shard(path: str) -> list[str]:
    """Shared with tools/inspect_shards.py: refuse an empty or truncated shard."""
    with open(path) as f:
        lines = [ln.strip() for ln in f if ln.strip()]
    if not lines:
        sys.exit(f"{path}: empty shard, re-run the crawler for it")  # HANG: exit
    return lines


def encode_shard(path: str) -> torch.Tensor:
    ids = [STOI.get(c, 1) for line in read_shard(path) for c in line.lower() + "."]
    return torch.tensor(ids, dtype=torch.long)


def write_crawl(directory: str, shards: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    words = "the model reads text and learns to predict the next letter of each word".split()
    os.makedirs(directory, exist_ok=True)
    paths = []
    for s in range(shards):
        path = os.path.join(directory, f"shard_{s:04d}.txt")
        with open(path, "w") as f:
            if s != 13:  # this fetch failed upstream: the crawler left an empty file
                for _ in range(200):
                    f.write(" ".join(rng.choice(words) for _ in range(12)) + "\n")
        paths.append(path)
    return paths


class CharGRU(nn.Module):
    def __init__(self, vocab: int, dim: int = 64):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.rnn = nn.GRU(dim, dim, batch_first=True)
        self.out = nn.Linear(dim, vocab)

    def forward(self, x):
        h, _ = self.rnn(self.emb(x))
        return self.out(h)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--shards", type=int, default=32)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--steps", type=int, default=200)
    args = parser.parse_args()

    paths = write_crawl("crawl", args.shards)
    print(f"tokenizing {len(paths)} shards with {args.workers} workers ...", flush=True)
    with mp.Pool(args.workers) as pool:
        encoded = pool.map(encode_shard, paths)  # HANG: map
    stream = torch.cat(encoded)
    print(f"{stream.numel()} tokens", flush=True)

    model = CharGRU(len(VOCAB))
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    ctx = 64
    for step in range(args.steps):
        starts = torch.randint(0, stream.numel() - ctx - 1, (32,))
        x = torch.stack([stream[s:s + ctx] for s in starts])
        y = torch.stack([stream[s + 1:s + ctx + 1] for s in starts])
        loss = nn.functional.cross_entropy(model(x).flatten(0, 1), y.flatten())
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 50 == 0:
            print(f"step {step}: loss {loss.item():.3f}", flush=True)


if __name__ == "__main__":
    main()
