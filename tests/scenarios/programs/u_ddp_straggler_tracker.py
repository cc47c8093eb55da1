"""Semantic-segmentation-style training, DDP under torchrun, with metrics sent to an
experiment tracker from rank 0.

Written from https://github.com/open-mmlab/mmsegmentation/issues/2137 (the wandb hook hangs
distributed training): every few steps rank 0 POSTs its metrics to the tracker over HTTP with
no timeout. The tracker accepts the connection and never answers, so rank 0 sits in the HTTP
read while rank 1 waits in DDP's gradient all-reduce inside backward().
"""

import argparse
import json
import os
import socket
import urllib.request

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler


class Tiles(Dataset):
    def __len__(self) -> int:
        return 1024

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        image = torch.randn(3, 16, 16, generator=torch.Generator().manual_seed(index))
        return image, (image.mean(0) > 0).long()


class SegHead(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.Conv2d(16, 2, 1))

    def forward(self, image: torch.Tensor) -> torch.Tensor:
        return self.net(image)


def log_metrics(tracker_url: str, metrics: dict) -> None:
    request = urllib.request.Request(tracker_url, data=json.dumps(metrics).encode(),
                                     headers={"Content-Type": "application/json"})
    urllib.request.urlopen(request).read()  # HANG: tracker


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--log-every", type=int, default=8)
    args = parser.parse_args()
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    tracker_url = os.environ.get("TRACKER_URL")
    if rank == 0 and tracker_url is None:  # stand-in for the tracker's front end: never answers
        tracker = socket.create_server(("127.0.0.1", 0))
        tracker_url = f"http://127.0.0.1:{tracker.getsockname()[1]}/api/runs/seg-01/log"
    torch.manual_seed(0)
    model = DDP(SegHead())
    dataset = Tiles()
    loader = DataLoader(dataset, batch_size=16, sampler=DistributedSampler(dataset))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    for step, (image, mask) in enumerate(loader, start=1):
        loss = nn.functional.cross_entropy(model(image), mask)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(f"rank {rank} step {step} loss {loss.item():.4f}", flush=True)
        if rank == 0 and step % args.log_every == 0:
            log_metrics(tracker_url, {"step": step, "loss": loss.item()})
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
