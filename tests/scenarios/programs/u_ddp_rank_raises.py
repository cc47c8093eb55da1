"""RGB-D segmentation training with DDP under torchrun: an RGB branch and a depth branch
fused by concatenation, with a shape check before the fusion.

Written from https://github.com/pytorch/torchtitan/issues/1790 ("distributed training hangs
on local error instead of exit": a ValueError raised on one rank for a spatial-size
mismatch): one depth map in rank 1's shard was exported at the wrong resolution. Rank 1
raises at the shape check and exits; rank 0 is in DDP's gradient all-reduce inside
backward() and fails when the connection to rank 1 closes.
"""

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler


class RGBDScans(Dataset):
    def __len__(self) -> int:
        return 400

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        g = torch.Generator().manual_seed(index)
        rgb = torch.randn(3, 24, 24, generator=g)
        side = 12 if index == 77 else 24  # scan 77 was exported at half resolution
        depth = torch.rand(1, side, side, generator=g)
        return rgb, depth, (rgb.mean(0, keepdim=True) > 0).float()


class FusionNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.rgb = nn.Conv2d(3, 8, 3, padding=1)
        self.depth = nn.Conv2d(1, 4, 3, padding=1)
        self.head = nn.Conv2d(12, 1, 1)

    def forward(self, rgb: torch.Tensor, depth: torch.Tensor) -> torch.Tensor:
        x, y = self.rgb(rgb), self.depth(depth)
        if x.shape[2:] != y.shape[2:]:
            raise ValueError(f"spatial size mismatch: {x.shape=}, {y.shape=}")  # HANG: raise
        return self.head(torch.relu(torch.cat([x, y], dim=1)))


def main() -> None:
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    dataset = RGBDScans()
    loader = DataLoader(dataset, batch_size=1, sampler=DistributedSampler(dataset, shuffle=False))
    torch.manual_seed(0)
    model = DDP(FusionNet())
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    for step, (rgb, depth, mask) in enumerate(loader):
        loss = nn.functional.binary_cross_entropy_with_logits(model(rgb, depth), mask)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % 5 == 0:
            print(f"rank {rank} step {step} loss {loss.item():.4f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
