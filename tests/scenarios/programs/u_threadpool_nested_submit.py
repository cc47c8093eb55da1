"""Builds the token cache for a training run with a thread pool before training: each shard
job downloads its parts through the same pool and waits for them. The pool's size is the
configured I/O concurrency, 1 by default (gentle on the object store): its one thread runs a
shard job that waits for part downloads queued behind it, and no thread is left to run them.
(Any concurrency up to the number of shard jobs can starve the same way; with exactly one
thread it always does.)

Written from https://github.com/langchain-ai/langchain/pull/10638 (an executor shared by
nested calls deadlocks at max_concurrency=1: `executor.submit(lambda: 1).result()` inside a
task of the same executor) and the deadlock examples of Python's concurrent.futures
documentation (https://github.com/python/cpython/issues/141617).
"""

import argparse
import time
import zlib
from concurrent.futures import ThreadPoolExecutor

import torch
from torch import nn


def download_part(shard: int, part: int) -> bytes:
    time.sleep(0.05)  # the object store
    return bytes((shard * 31 + part * 7 + i) % 251 for i in range(4096))


def build_shard(pool: ThreadPoolExecutor, shard: int, parts: int) -> list[int]:
    futures = [pool.submit(download_part, shard, part) for part in range(parts)]
    blobs = [future.result() for future in futures]  # HANG: part
    return [zlib.crc32(blob) % 1000 for blob in blobs]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--shards", type=int, default=4)
    parser.add_argument("--io-threads", type=int, default=1)
    args = parser.parse_args()
    with ThreadPoolExecutor(max_workers=args.io_threads, thread_name_prefix="io") as pool:
        shards = [pool.submit(build_shard, pool, shard, 8) for shard in range(args.shards)]
        tokens = [token for shard in shards for token in shard.result()]  # HANG: shard
    print(f"cached {len(tokens)} tokens", flush=True)
    model = nn.Embedding(1000, 16)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    ids = torch.tensor(tokens)
    for step in range(20):
        loss = model(ids).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(f"step {step} loss {loss.item():.4f}", flush=True)


if __name__ == "__main__":
    main()
