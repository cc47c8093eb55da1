"""Healthy control for u_threadpool_nested_submit: the same token cache, built with a thread
pool the right way (the shard jobs do not wait inside the pool for work queued in it: every
part download is submitted from the main thread, and the shards are assembled there).

Written from the fix discussed in https://github.com/langchain-ai/langchain/pull/10638 (share one
executor, but never block a worker on a task of the same bounded executor).
"""

import time
import zlib
from concurrent.futures import ThreadPoolExecutor

import torch
from torch import nn


def download_part(shard: int, part: int) -> bytes:
    time.sleep(0.05)
    return bytes((shard * 31 + part * 7 + i) % 251 for i in range(4096))


def main() -> None:
    with ThreadPoolExecutor(max_workers=4, thread_name_prefix="io") as pool:
        parts = {(s, p): pool.submit(download_part, s, p) for s in range(4) for p in range(8)}
        tokens = [zlib.crc32(parts[s, p].result()) % 1000 for s in range(4) for p in range(8)]
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
