"""Tokenizes a corpus with a multiprocessing.Pool before training a bag-of-words classifier.

Written from https://github.com/huggingface/datasets/pull/5976 (Dataset.map with num_proc
waits for ever when a worker process is killed by the OOM killer; the PR reproduces it with
`os.kill(os.getpid(), 9)` inside the mapped function) and CPython bpo-22393
(python/cpython#10441): one document is so large that tokenizing it blows the worker's
memory budget and the kernel kills the worker. Pool.map never returns: the pool starts a
replacement worker but the task the dead one held is never finished.
"""

import argparse
import os
import signal
import zlib
from multiprocessing import Pool

import torch
from torch import nn

MEMORY_BUDGET_CHARS = 50_000


def tokenize(document: str) -> list[int]:
    if len(document) > MEMORY_BUDGET_CHARS:  # the real tokenizer's memory use explodes here
        os.kill(os.getpid(), signal.SIGKILL)  # HANG: oom-kill
    return [zlib.crc32(word.encode()) % 5000 for word in document.split()]


def make_corpus(documents: int) -> list[str]:
    words = ["the", "model", "loss", "gradient", "batch", "token", "layer", "epoch"]
    corpus = [" ".join(words[(i + j) % len(words)] for j in range(50 + i % 30))
              for i in range(documents)]
    corpus[documents // 2] = "appendix " * 20_000  # a scraped page that is one huge table
    return corpus


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--documents", type=int, default=400)
    parser.add_argument("--num-proc", type=int, default=2)
    args = parser.parse_args()
    corpus = make_corpus(args.documents)
    print(f"tokenizing {len(corpus)} documents with {args.num_proc} processes", flush=True)
    with Pool(args.num_proc) as pool:
        token_ids = pool.map(tokenize, corpus, chunksize=8)  # HANG: map
    print(f"tokenized {len(token_ids)} documents", flush=True)
    bags = torch.zeros(len(token_ids), 5000)
    for row, ids in enumerate(token_ids):
        bags[row, ids] = 1.0
    model = nn.Linear(5000, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    labels = torch.arange(len(token_ids)) % 2
    for epoch in range(3):
        loss = nn.functional.cross_entropy(model(bags), labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(f"epoch {epoch} loss {loss.item():.4f}", flush=True)


if __name__ == "__main__":
    main()
