"""Audio-classifier training started with torch.multiprocessing.spawn (DDP, gloo), with a
short process-group timeout and a dataset that rank 0 downloads before training.

Written from https://github.com/meta-pytorch/data/issues/659 ("Socket Timeout when rank 0
arrives late": rank 0 loads data over HTTP first, the other ranks go ahead and time out):
rank 0 fetches and unpacks the dataset, which takes far longer than the 2 s timeout (30 s, so
that even on a loaded machine rank 0 is still downloading when rank 1's failure ends the job);
rank 1 goes straight on to wrap its model in DDP, whose constructor runs a collective that
gives up.
"""

import datetime
import os
import socket
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

DIST_TIMEOUT = datetime.timedelta(seconds=2)


def download_dataset(root: str) -> None:
    for part in range(30):
        time.sleep(1.0)  # fetching one archive part from the dataset mirror  # HANG: download
        print(f"downloaded part {part + 1}/30 to {root}", flush=True)


class KeywordSpotter(nn.Module):
    def __init__(self, classes: int = 12) -> None:
        super().__init__()
        self.conv = nn.Sequential(nn.Conv1d(1, 8, 9, stride=4), nn.ReLU(), nn.AdaptiveAvgPool1d(16))
        self.fc = nn.Linear(8 * 16, classes)

    def forward(self, audio: torch.Tensor) -> torch.Tensor:
        return self.fc(self.conv(audio).flatten(1))


def run(rank: int, world_size: int, port: int) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world_size,  # HANG: pg-timeout
                            timeout=DIST_TIMEOUT)
    if rank == 0:
        download_dataset("data/speech_commands")
    model = DDP(KeywordSpotter())
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(rank)
    for step in range(30):
        audio = torch.randn(16, 1, 1600, generator=g)
        label = torch.randint(0, 12, (16,), generator=g)
        loss = nn.functional.cross_entropy(model(audio), label)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(f"rank {rank} step {step} loss {loss.item():.4f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    mp.spawn(run, args=(2, port), nprocs=2)
