"""DDP job whose experiment tracker asks rank 0 to log in on the terminal.

From https://github.com/wandb/wandb/issues/592: after an upgrade, the tracker's init no longer
ignored missing credentials but asked "(1) Create an account (2) Use an existing account (3)
Don't visualize my results" and waited for an answer, and the distributed workers hung. Here
rank 0 sets up the tracker after wrapping the model, finds no API key, prints the menu and waits
for a choice on stdin, which nobody types into under the launcher; rank 1 has started training
and waits in its first backward for rank 0's gradients.
"""

import datetime
import netrc
import os
import sys

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

PROJECT = "speech-commands-kws"
EPOCHS = 3
BATCH_SIZE = 32


class Tracker:
    """Thin wrapper around the team's tracking server client."""

    def __init__(self, project, api_key):
        self.project = project
        self.api_key = api_key
        self.offline = api_key is None

    def log(self, **metrics):
        if not self.offline:
            print(f"tracker[{self.project}] {metrics}", flush=True)


def find_api_key():
    if os.environ.get("TRACKER_API_KEY"):
        return os.environ["TRACKER_API_KEY"]
    try:
        auth = netrc.netrc().authenticators("api.tracker.internal")
    except (FileNotFoundError, netrc.NetrcParseError):
        auth = None
    return auth[2] if auth else None


def init_tracker(project):
    api_key = find_api_key()
    if api_key is None:
        print("tracker: (1) Create an account", flush=True)
        print("tracker: (2) Use an existing account", flush=True)
        print("tracker: (3) Don't visualize my results", flush=True)
        print("tracker: Enter your choice: ", end="", flush=True)
        choice = sys.stdin.readline().strip()  # HANG: login-prompt
        if choice == "2":
            print("tracker: Paste an API key from your profile: ", end="", flush=True)
            api_key = sys.stdin.readline().strip()
    return Tracker(project, api_key)


def make_data(n=2048):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(n, 40, generator=g)  # 40 MFCC features per clip
    y = (x[:, :10].sum(1) > 0).long()
    return TensorDataset(x, y)


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(minutes=10))
    rank = dist.get_rank()
    torch.manual_seed(0)

    dataset = make_data()
    sampler = DistributedSampler(dataset)
    loader = DataLoader(dataset, batch_size=BATCH_SIZE, sampler=sampler)
    model = DDP(nn.Sequential(nn.Linear(40, 128), nn.ReLU(), nn.Linear(128, 2)))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)

    tracker = init_tracker(PROJECT) if rank == 0 else None

    for epoch in range(EPOCHS):
        sampler.set_epoch(epoch)
        for step, (x, y) in enumerate(loader):
            loss = F.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()  # HANG: wait-rank0-grads
            optimizer.step()
            print(f"[rank {rank}] epoch {epoch} step {step} loss {loss.item():.4f}", flush=True)
            if tracker is not None:
                tracker.log(loss=loss.item(), epoch=epoch)

    dist.destroy_process_group()


if __name__ == "__main__":
    main()
