"""Byte-level language-model pretraining fed by a thread pool that tokenizes documents: a
warm-up epoch on a small curated set, then the main run on an endless stream of crawled
documents until max_steps. The job caps its own address space (as `ulimit -v` in the batch
script of a shared node would) so that it fails rather than taking the node down.

Written from https://github.com/python/cpython/issues/74508 ("concurrent.futures.Executor.map()
consumes all memory when big generators are used"): Executor.map submits a task for every
item of its iterable before it yields the first result. On the finite curated list that is
harmless; on the endless crawl stream the main thread never gets a batch back: it keeps
reading documents and queueing tasks while the finished token tensors pile up in their
futures, until the allocation that crosses the cap fails with MemoryError.
"""

import itertools
import resource
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import torch
from torch import nn

CONTEXT, BATCH, MAX_STEPS = 128, 16, 2000
HEADROOM = 1536 * 2**20


def cap_address_space() -> None:
    with open("/proc/self/status") as status:
        vm_kb = next(int(line.split()[1]) for line in status if line.startswith("VmSize:"))
    limit = vm_kb * 1024 + HEADROOM
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def crawl_stream(corpus: bytes, doc_len: int = 8192):
    """Endless stream of crawled documents (the crawl is re-read from the start when done)."""
    for epoch in itertools.count():
        for start in range(epoch % 97, len(corpus) - doc_len, doc_len):
            yield corpus[start:start + doc_len]


def tokenize(doc: bytes) -> torch.Tensor:
    return torch.from_numpy(np.frombuffer(doc, dtype=np.uint8).astype(np.int64))


def batches(pool: ThreadPoolExecutor, docs):
    rows = []
    for ids in pool.map(tokenize, docs):  # HANG: eager-map
        rows.append(ids[:CONTEXT + 1])
        if len(rows) == BATCH:
            yield torch.stack(rows)
            rows = []


def main() -> None:
    cap_address_space()
    rng = np.random.default_rng(0)
    corpus = bytes(rng.integers(32, 127, size=64 * 2**20, dtype=np.uint8))  # the crawl
    curated = [corpus[i * 4096:(i + 1) * 4096] for i in range(256)]
    torch.manual_seed(0)
    model = nn.Sequential(nn.Embedding(256, 64), nn.Linear(64, 256))
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="tokenizer")

    def train_on(stream, phase: str, step: int) -> int:
        for batch in stream:
            logits = model(batch[:, :-1])
            loss = nn.functional.cross_entropy(logits.reshape(-1, 256), batch[:, 1:].reshape(-1))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            print(f"{phase} step {step} loss {loss.item():.3f}", flush=True)
            step += 1
            if step >= MAX_STEPS:
                break
        return step

    step = train_on(batches(pool, curated), "warmup", 0)
    print(f"warm-up done after {step} steps, streaming the crawl", flush=True)
    step = train_on(batches(pool, crawl_stream(corpus)), "main", step)  # HANG: endless-stream
    torch.save(model.state_dict(), "/tmp/byte_lm_stream.pt")


if __name__ == "__main__":
    main()
