"""Token-level language-model training from a memory-mapped token cache, DDP started with
torch.multiprocessing.spawn (gloo).

Written from https://github.com/NVlabs/Sana/issues/126 (a rank dies with signal 7, SIGBUS,
in multi-process training) and the mechanism of Textualize/toolong#9 (a memory-mapped file
truncated under its reader): rank 0 re-tokenizes the corpus when a new tokenizer is ready
and rewrites the shared cache in place. The new cache is shorter, and rank 1 still maps the
old length: its next read past the new end of file kills it with SIGBUS, while rank 0 waits
for it in DDP's gradient all-reduce inside backward(); mp.spawn then ends the job.
"""

import os
import socket
import tempfile

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

VOCAB, WINDOW, BATCH = 1000, 32, 16


def build_cache(path: str, count: int) -> torch.Tensor:
    open(path, "wb").close()  # start afresh: truncates the file in place
    cache = torch.from_file(path, shared=True, size=count, dtype=torch.int32)
    cache.copy_(torch.randint(0, VOCAB, (count,), dtype=torch.int32))
    return cache


def train(rank: int, world_size: int, port: int, cache_path: str, count: int) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world_size)
    tokens = torch.from_file(cache_path, shared=True, size=count, dtype=torch.int32)
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Embedding(VOCAB, 16), nn.Flatten(), nn.Linear(16 * WINDOW, VOCAB)))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(1, 41):
        if rank == 0 and step == 6:  # the new tokenizer is ready: re-tokenize the corpus
            tokens = build_cache(cache_path, count // 4)  # HANG: rebuild-cache
        start = rank * len(tokens) // world_size + step * BATCH * (WINDOW + 1)
        window = tokens[start:start + BATCH * (WINDOW + 1)].view(BATCH, WINDOW + 1)
        batch = window.long()  # HANG: read-cache
        loss = nn.functional.cross_entropy(model(batch[:, :-1]), batch[:, -1])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(f"rank {rank} step {step} loss {loss.item():.4f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    cache, count = os.path.join(tempfile.mkdtemp(), "tokens.bin"), 1 << 20
    build_cache(cache, count)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    mp.spawn(train, args=(2, port, cache, count), nprocs=2)
