"""Healthy control: a language model's corpus is tokenized up front by a multiprocessing.Pool
(`pool.map` over shards, one of them far larger than the rest), then training runs with a loss
line every few steps. Exits 0.

Written from https://github.com/huggingface/datasets/issues/6077 ("Mapping gets stuck at 99%"):
the map that looked stuck near its end was still working, on the last, slow part. Here the main
process waits silently in `pool.map` for the big shard for about 8-12 s on a loaded 2-core
machine while one worker computes at full CPU (the other is idle); nothing is blocked and the
job finishes. Its hang timeout (30 s) is above that silent stretch.
"""

import itertools
import multiprocessing as mp
import re

import torch
from torch import nn

VOCAB, SEQ = 2048, 32
WORD = re.compile(r"[a-z]+|[0-9]+|[^\sa-z0-9]")


def shard_text(i, n_lines):
    g = torch.Generator().manual_seed(i)
    ids = torch.randint(0, 5000, (n_lines, 12), generator=g).tolist()
    return [" ".join(f"w{t}, n{t % 97}" for t in row) for row in ids]


def tokenize_shard(args):
    i, n_lines = args
    out = []
    for line in shard_text(i, n_lines):
        out.extend(hash(w) % VOCAB for w in WORD.findall(line))
    return out


def main():
    sizes = [4000] * 7 + [90000]  # the last crawl shard is ~25x the others
    print(f"tokenizing {len(sizes)} shards with 2 processes...", flush=True)
    with mp.Pool(2) as pool:
        shards = pool.map(tokenize_shard, list(enumerate(sizes)))
    tokens = torch.tensor(list(itertools.islice(itertools.chain(*shards), 120 * 16 * (SEQ + 1))))
    print(f"{len(tokens)} tokens", flush=True)
    data = tokens[: len(tokens) // (SEQ + 1) * (SEQ + 1)].view(-1, SEQ + 1)
    model = nn.Sequential(nn.Embedding(VOCAB, 64), nn.Linear(64, VOCAB))
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    for step in range(60):
        batch = data[step * 16:(step + 1) * 16]
        logits = model(batch[:, :-1])
        loss = nn.functional.cross_entropy(logits.reshape(-1, VOCAB), batch[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 10 == 0:
            print(f"step {step} loss {loss.item():.4f}", flush=True)
    print("done", flush=True)


if __name__ == "__main__":
    main()
