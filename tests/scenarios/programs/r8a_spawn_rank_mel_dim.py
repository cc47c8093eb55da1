"""Speaker-embedding model (a small MLP over mel frames) trained with DistributedDataParallel on
two CPU processes started by `torch.multiprocessing.spawn`, gloo backend on 127.0.0.1 (port
from MASTER_PORT, else 29500 plus a random offset). Each rank trains on its own list of
pre-extracted feature shards, one shard per epoch, read from a per-rank data config.

Written from https://github.com/anonymous-pits/pits/issues/20 ("mat1 and mat2 shapes cannot be
multiplied", reported under "-- Process 0 terminated with the following error" from
torch.multiprocessing.spawn: one spawned training process died of a shape mismatch between its
input features and the model). Same mechanism here, on rank 1: the model is built from the
global hyper-parameters (80 mel bins), but rank 1's config lists, for its second epoch, a
shard that an older preprocessing run extracted with 64 mel bins. Rank 1's forward pass on
that shard raises RuntimeError in its own training loop while rank 0, which has finished the
same step's forward, waits for it in DDP's gradient all-reduce; spawn then reports process 1's
traceback and stops rank 0.
"""

import os
import random

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

N_MELS = 80
SPEAKERS = 16
ROWS_PER_SHARD = 256
BATCH = 32

# Per-rank data config: the shards each rank trains on, one per epoch, with the number of mel
# bins they were extracted with.
RANK_SHARDS = {
    0: [{"name": "vox-000", "n_mels": 80}, {"name": "vox-002", "n_mels": 80},
        {"name": "vox-004", "n_mels": 80}],
    1: [{"name": "vox-001", "n_mels": 80}, {"name": "vox-003-legacy", "n_mels": 64},
        {"name": "vox-005", "n_mels": 80}],
}


def load_shard(spec: dict, seed: int):
    g = torch.Generator().manual_seed(seed)
    centers = torch.randn(SPEAKERS, spec["n_mels"], generator=g)
    speakers = torch.randint(0, SPEAKERS, (ROWS_PER_SHARD,), generator=g)
    mels = centers[speakers] + 0.7 * torch.randn(ROWS_PER_SHARD, spec["n_mels"], generator=g)
    return mels, speakers


def train(rank: int, world_size: int, port: int) -> None:
    os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = "127.0.0.1", str(port)
    dist.init_process_group("gloo", rank=rank, world_size=world_size)
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = DDP(nn.Sequential(nn.Linear(N_MELS, 128), nn.ReLU(), nn.Linear(128, 64), nn.ReLU(),
                              nn.Linear(64, SPEAKERS)))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    for epoch, spec in enumerate(RANK_SHARDS[rank]):
        mels, speakers = load_shard(spec, seed=10 * epoch + rank)
        total = 0.0
        for start in range(0, ROWS_PER_SHARD, BATCH):
            x, y = mels[start:start + BATCH], speakers[start:start + BATCH]
            logits = model(x)  # HANG: forward
            loss = nn.functional.cross_entropy(logits, y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += loss.item()
        print(f"[rank {rank}] epoch {epoch} shard {spec['name']} "
              f"loss {total / (ROWS_PER_SHARD // BATCH):.4f}", flush=True)
    dist.barrier()
    if rank == 0:
        print("training finished", flush=True)
    dist.destroy_process_group()


def main() -> None:
    port = int(os.environ.get("MASTER_PORT", 29500 + random.randrange(2000)))
    mp.spawn(train, args=(2, port), nprocs=2, join=True)


if __name__ == "__main__":
    main()
