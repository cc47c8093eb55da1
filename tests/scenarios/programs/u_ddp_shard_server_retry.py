"""DDP training whose ranks each fetch their data-shard manifest from a small shard server before
every epoch, retrying with backoff when the server is unreachable.

Written from https://github.com/sandialabs/Fenix/issues/27 ("__fenix_repair_ranks could hang due
to permanent failure to repair communicators"): a `while not success` retry loop with no limit on
attempts keeps one process trying forever when the failure is permanent, and the whole job hangs.
Here the retry loop fetches a shard list: rank 1's server address is wrong, so it retries
quietly forever while rank 0 waits for it in the gradient all-reduce.
"""

import datetime
import json
import os
import socket
import time

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP


def fetch_manifest(host: str, port: int, epoch: int) -> list[int]:
    with socket.create_connection((host, port), timeout=2.0) as conn:
        conn.sendall(json.dumps({"epoch": epoch}).encode() + b"\n")
        return json.loads(conn.makefile().readline())["shards"]


def manifest_with_retry(host: str, port: int, epoch: int) -> list[int]:
    delay = 0.5
    while True:  # HANG: retry
        try:
            return fetch_manifest(host, port, epoch)
        except OSError:
            time.sleep(delay)  # HANG: sleep
            delay = min(delay * 2, 5.0)


def local_manifest(rank: int, epoch: int) -> list[int]:
    return [rank * 100 + epoch * 10 + i for i in range(8)]


def main() -> None:
    dist.init_process_group("gloo", timeout=datetime.timedelta(minutes=30))
    rank = dist.get_rank()
    shard_host = os.environ.get("SHARD_SERVER", "")
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(32, 128), nn.GELU(), nn.Linear(128, 1)))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    for epoch in range(5):
        if epoch > 0 and rank == 1:
            shards = manifest_with_retry(shard_host or "127.0.0.1", 9, epoch)
        else:
            shards = local_manifest(rank, epoch)
        for step, shard in enumerate(shards):
            g = torch.Generator().manual_seed(shard)
            x = torch.randn(64, 32, generator=g)
            y = x[:, :4].sum(1, keepdim=True)
            loss = nn.functional.mse_loss(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            print(f"rank {rank} epoch {epoch} step {step} loss {loss.item():.4f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
