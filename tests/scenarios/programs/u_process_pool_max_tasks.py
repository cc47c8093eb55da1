"""Tokenizes a corpus in a ProcessPoolExecutor whose workers are replaced every few tasks
(`max_tasks_per_child`, the usual cure for a tokenizer that leaks memory), then trains.

Written from https://github.com/python/cpython/pull/140900 (gh-115634: "Fix
ProcessPoolExecutor deadlock with max_tasks_per_child": `ProcessPoolExecutor(1,
max_tasks_per_child=2)` runs two tasks, then hangs forever; present since Python 3.11). On an
affected Python the pool stops starting workers once the first one retires, and the remaining
tasks never run.
"""

import zlib
from concurrent.futures import ProcessPoolExecutor

import torch
from torch import nn


def tokenize(document: str) -> list[int]:
    return [zlib.crc32(word.encode()) % 500 for word in document.split()]


def main() -> None:
    corpus = [" ".join(f"w{(i * j) % 97}" for j in range(40)) for i in range(12)]
    with ProcessPoolExecutor(max_workers=1, max_tasks_per_child=2) as pool:
        futures = [pool.submit(tokenize, document) for document in corpus]
        token_ids = [future.result() for future in futures]  # HANG: tokenize
    print(f"tokenized {len(token_ids)} documents", flush=True)
    model = nn.EmbeddingBag(500, 8)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    batch = torch.tensor(token_ids)
    for step in range(10):
        loss = model(batch).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(f"step {step} loss {loss.item():.4f}", flush=True)


if __name__ == "__main__":
    main()
