"""Object-detection-style training with DDP under torchrun, a short process-group timeout
("fail fast instead of hanging for 30 minutes") and evaluation on rank 0 only.

Written from https://github.com/facebookresearch/detectron2/issues/5121 ("Timed out waiting
1800000ms" from gloo) and the motivation of pytorch/pytorch#14376 (one timeout for all
collectives, while some phases, such as evaluation, take far longer than a training step):
rank 0 evaluates after the epoch, which takes longer than the 2 s timeout, and rank 1's
barrier gives up with gloo's "Timed out waiting 2000ms".
"""

import argparse
import datetime
import time

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


class BoxRegressor(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.backbone = nn.Sequential(nn.Conv2d(3, 8, 3, stride=2), nn.ReLU(), nn.Flatten())
        self.boxes = nn.Linear(8 * 7 * 7, 4)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return self.boxes(self.backbone(images))


def evaluate(model: nn.Module, images: torch.Tensor, boxes: torch.Tensor) -> float:
    errors = []
    with torch.no_grad():
        for image, box in zip(images, boxes, strict=True):  # one at a time, like COCO's evaluator
            errors.append((model(image[None]) - box).abs().mean().item())  # HANG: evaluate
            time.sleep(0.02)  # matching predictions against annotations  # HANG: evaluate
    return sum(errors) / len(errors)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dist-timeout", type=float, default=2.0, help="seconds")
    args = parser.parse_args()
    timeout = datetime.timedelta(seconds=args.dist_timeout)
    dist.init_process_group("gloo", timeout=timeout)  # HANG: pg-timeout
    rank = dist.get_rank()
    g = torch.Generator().manual_seed(0)
    data = TensorDataset(torch.randn(256, 3, 16, 16, generator=g), torch.rand(256, 4, generator=g))
    val_images = torch.randn(200, 3, 16, 16, generator=g)
    val_boxes = torch.rand(200, 4, generator=g)
    loader = DataLoader(data, batch_size=16, sampler=DistributedSampler(data))
    torch.manual_seed(0)
    model = DDP(BoxRegressor())
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for epoch in range(5):
        for images, boxes in loader:
            loss = nn.functional.smooth_l1_loss(model(images), boxes)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        print(f"rank {rank} epoch {epoch} loss {loss.item():.4f}", flush=True)
        if rank == 0:
            error = evaluate(model.module, val_images, val_boxes)  # HANG: evaluate
            print(f"epoch {epoch} box L1 {error:.4f}", flush=True)
        dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
