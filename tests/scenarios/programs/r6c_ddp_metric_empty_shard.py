"""Camera-trap box detector, DDP under torchrun, with distributed IoU / precision metrics.

Written from https://github.com/weecology/DeepForest/issues/1407: `_compute_epoch_metrics()`
calls the IoU metric's compute() (a collective: it gathers every rank's state) only when the
rank's OWN metric state holds ground-truth boxes. Rank 1's validation shard holds only empty
frames, so rank 1 skips that gather; its precision-metric gathers pair with rank 0's IoU gathers
(same shapes, no error), the ranks are now one collective apart, and rank 0 ends up waiting in
the precision metric's gather while rank 1 has gone on to the next epoch and waits in DDP's
gradient all-reduce.
"""

import argparse

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler


def gather_all_tensors(local: torch.Tensor) -> torch.Tensor:
    """Like torchmetrics' gather_all_tensors: gather the sizes, pad, gather the data."""
    size = torch.tensor([local.shape[0]], dtype=torch.long)
    sizes = [torch.zeros_like(size) for _ in range(dist.get_world_size())]
    dist.all_gather(sizes, size)
    longest = int(max(s.item() for s in sizes))
    padded = torch.zeros(longest, dtype=local.dtype)
    padded[: local.shape[0]] = local
    gathered = [torch.zeros_like(padded) for _ in sizes]
    dist.all_gather(gathered, padded)
    return torch.cat([g[: int(s.item())] for g, s in zip(gathered, sizes, strict=True)])


class IoUMetric:
    def __init__(self) -> None:
        self.groundtruth_labels: list[float] = []
        self.ious: list[float] = []

    def update(self, pred_boxes, gt_boxes, has_box) -> None:
        for pred, gt, present in zip(pred_boxes, gt_boxes, has_box, strict=True):
            if present:  # empty frames carry no ground truth for IoU
                lo, hi = torch.maximum(pred[:2], gt[:2]), torch.minimum(pred[2:], gt[2:])
                inter = (hi - lo).clamp(min=0).prod()
                union = (pred[2:] - pred[:2]).clamp(min=0).prod() + (gt[2:] - gt[:2]).prod()
                self.ious.append(float(inter / (union - inter + 1e-6)))
                self.groundtruth_labels.append(1.0)

    def compute(self) -> float:
        return float(gather_all_tensors(torch.tensor(self.ious)).mean())


class PrecisionRecallMetric:
    def __init__(self) -> None:
        self.scores: list[float] = []
        self.targets: list[float] = []

    def update(self, objectness, has_box) -> None:
        self.scores += objectness.sigmoid().tolist()
        self.targets += has_box.float().tolist()

    def compute(self) -> dict:
        scores = gather_all_tensors(torch.tensor(self.scores))
        targets = gather_all_tensors(torch.tensor(self.targets))
        hits = ((scores > 0.5) & (targets > 0.5)).sum()
        return {"precision": float(hits / max(int((scores > 0.5).sum()), 1)),
                "recall": float(hits / max(int(targets.sum()), 1))}


class Frames(Dataset):
    """Synthetic 3x16x16 frames; `with_box[i]` says whether frame i shows an animal."""

    def __init__(self, with_box: list[bool], seed: int) -> None:
        self.with_box, self.seed = with_box, seed

    def __len__(self) -> int:
        return len(self.with_box)

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(self.seed * 1000 + i)
        image = torch.rand(3, 16, 16, generator=g) * 0.2
        box = torch.zeros(4)
        if self.with_box[i]:
            x0, y0 = torch.randint(0, 8, (2,), generator=g).tolist()
            image[:, y0:y0 + 8, x0:x0 + 8] += 0.8
            box = torch.tensor([x0, y0, x0 + 8, y0 + 8], dtype=torch.float) / 16
        return image, box, torch.tensor(self.with_box[i])


class TinyDetector(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(4),
                                  nn.Flatten(), nn.Linear(128, 32), nn.ReLU())
        self.box_head, self.obj_head = nn.Linear(32, 4), nn.Linear(32, 1)

    def forward(self, x):
        h = self.body(x)
        return self.box_head(h).sigmoid(), self.obj_head(h).squeeze(1)


def compute_epoch_metrics(iou_metric, pr_metric) -> dict:
    metrics = {}
    if len(iou_metric.groundtruth_labels) > 0:  # HANG: gate
        metrics["iou"] = iou_metric.compute()  # HANG: gate
    metrics.update(pr_metric.compute())
    return metrics


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--batch-size", type=int, default=8)
    args = parser.parse_args()
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    train = Frames([i % 3 != 0 for i in range(96)], seed=1)
    # validation frames sorted by file name: every animal sighting landed on an even index,
    # so the unshuffled DistributedSampler gives rank 1 only empty frames
    val = Frames([i % 2 == 0 for i in range(12)], seed=2)  # HANG: val-shard
    train_loader = DataLoader(train, batch_size=args.batch_size,
                              sampler=DistributedSampler(train, shuffle=True))
    val_loader = DataLoader(val, batch_size=4, sampler=DistributedSampler(val, shuffle=False))
    model = DDP(TinyDetector())
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    for epoch in range(args.epochs):
        train_loader.sampler.set_epoch(epoch)
        model.train()
        for step, (images, boxes, has_box) in enumerate(train_loader):
            pred_boxes, objectness = model(images)
            box_loss = ((pred_boxes - boxes).abs().sum(1) * has_box).mean()
            obj_loss = nn.functional.binary_cross_entropy_with_logits(objectness, has_box.float())
            loss = box_loss + obj_loss
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            if step % 3 == 0:
                print(f"[rank {rank}] epoch {epoch} step {step} loss {loss.item():.4f}", flush=True)
        model.eval()
        iou_metric, pr_metric = IoUMetric(), PrecisionRecallMetric()
        with torch.no_grad():
            for images, boxes, has_box in val_loader:
                pred_boxes, objectness = model(images)
                iou_metric.update(pred_boxes, boxes, has_box)
                pr_metric.update(objectness, has_box)
        metrics = compute_epoch_metrics(iou_metric, pr_metric)
        print(f"[rank {rank}] epoch {epoch} validation {metrics}", flush=True)
    dist.destroy_process_group()
    print(f"[rank {rank}] done", flush=True)


if __name__ == "__main__":
    main()
