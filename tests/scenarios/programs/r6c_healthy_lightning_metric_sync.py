"""Box detector in Lightning, DDP on two CPU processes, validation metrics gathered every epoch.

Healthy control, written from the fix for https://github.com/weecology/DeepForest/issues/1407
(https://github.com/weecology/DeepForest/pull/1426): rank 1's validation shard still holds only
empty frames, but every rank now calls every metric's gather, whatever its local state, so the
ranks stay in step and the run finishes.
"""

import argparse

import lightning as L
import torch
import torch.distributed as dist
from torch import nn
from torch.utils.data import DataLoader, Dataset


def gather_all_tensors(local: torch.Tensor) -> torch.Tensor:
    size = torch.tensor([local.shape[0]], dtype=torch.long)
    sizes = [torch.zeros_like(size) for _ in range(dist.get_world_size())]
    dist.all_gather(sizes, size)
    longest = max(int(s.item()) for s in sizes)
    padded = torch.zeros(max(longest, 1), dtype=local.dtype)
    padded[: local.shape[0]] = local
    gathered = [torch.zeros_like(padded) for _ in sizes]
    dist.all_gather(gathered, padded)
    return torch.cat([g[: int(s.item())] for g, s in zip(gathered, sizes, strict=True)])


class Frames(Dataset):
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


class Detector(L.LightningModule):
    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(4),
                                  nn.Flatten(), nn.Linear(128, 32), nn.ReLU())
        self.box_head, self.obj_head = nn.Linear(32, 4), nn.Linear(32, 1)
        self.val_ious: list[float] = []
        self.val_scores: list[float] = []

    def forward(self, x):
        h = self.body(x)
        return self.box_head(h).sigmoid(), self.obj_head(h).squeeze(1)

    def training_step(self, batch, batch_idx):
        images, boxes, has_box = batch
        pred, obj = self(images)
        loss = ((pred - boxes).abs().sum(1) * has_box).mean() + \
            nn.functional.binary_cross_entropy_with_logits(obj, has_box.float())
        return loss

    def validation_step(self, batch, batch_idx):
        images, boxes, has_box = batch
        pred, obj = self(images)
        for p, b, present in zip(pred, boxes, has_box, strict=True):
            if present:
                lo, hi = torch.maximum(p[:2], b[:2]), torch.minimum(p[2:], b[2:])
                inter = (hi - lo).clamp(min=0).prod()
                union = (p[2:] - p[:2]).clamp(min=0).prod() + (b[2:] - b[:2]).prod() - inter
                self.val_ious.append(float(inter / (union + 1e-6)))
        self.val_scores += obj.sigmoid().tolist()

    def on_validation_epoch_end(self):
        # every rank gathers, even one whose shard had no boxes (DeepForest#1426)
        ious = gather_all_tensors(torch.tensor(self.val_ious))
        scores = gather_all_tensors(torch.tensor(self.val_scores))
        iou = float(ious.mean()) if len(ious) else 0.0
        print(f"[rank {self.global_rank}] epoch {self.current_epoch} val iou {iou:.3f} "
              f"mean score {float(scores.mean()):.3f}", flush=True)
        self.val_ious.clear()
        self.val_scores.clear()

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=3e-3)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=3)
    args = parser.parse_args()
    L.seed_everything(0)
    train = Frames([i % 3 != 0 for i in range(96)], seed=1)
    val = Frames([i % 2 == 0 for i in range(12)], seed=2)  # rank 1: only empty frames
    trainer = L.Trainer(accelerator="cpu", devices=2, strategy="ddp", max_epochs=args.epochs,
                        num_sanity_val_steps=0, logger=False, enable_checkpointing=False,
                        enable_progress_bar=False, enable_model_summary=False)
    trainer.fit(Detector(), DataLoader(train, batch_size=8, shuffle=True),
                DataLoader(val, batch_size=4))
    print(f"[rank {trainer.global_rank}] training finished", flush=True)


if __name__ == "__main__":
    main()
