"""Siamese embedding network with a contrastive loss, Lightning DDP on two CPU processes.

Written from https://github.com/adambielski/siamese-triplet/issues/18: the contrastive loss
takes `distances.sqrt()`, and a pair whose two samples are the same image (the pair sampler
draws the partner with replacement) has distance exactly 0, where the derivative of sqrt is
infinite; the backward pass produces NaN. The run has `detect_anomaly=True`, so autograd raises
"Function 'SqrtBackward0' returned nan values" in the backward of the first batch holding such a
pair, and the job fails.
"""

import argparse

import lightning as L
import torch
from torch import nn
from torch.nn import functional as F
from torch.utils.data import DataLoader, Dataset


class PairDataset(Dataset):
    """(image_a, image_b, same_class) pairs drawn from a small labelled image set."""

    def __init__(self, n_images: int, n_pairs: int, n_classes: int) -> None:
        g = torch.Generator().manual_seed(5)
        self.labels = torch.randint(0, n_classes, (n_images,), generator=g)
        protos = torch.randn(n_classes, 1, 12, 12, generator=g)
        self.images = protos[self.labels] + 0.3 * torch.randn(n_images, 1, 12, 12, generator=g)
        first = torch.arange(n_pairs) % n_images
        second = torch.randint(0, n_images, (n_pairs,), generator=g)  # HANG: pairs
        self.pairs = torch.stack([first, second], 1)

    def __len__(self) -> int:
        return len(self.pairs)

    def __getitem__(self, i):
        a, b = self.pairs[i].tolist()
        return self.images[a], self.images[b], (self.labels[a] == self.labels[b]).float()


class ContrastiveLoss(nn.Module):
    def __init__(self, margin: float = 1.0) -> None:
        super().__init__()
        self.margin = margin

    def forward(self, out1, out2, target):
        distances = (out2 - out1).pow(2).sum(1)  # squared distances
        losses = 0.5 * (target * distances +
                        (1 - target) * F.relu(self.margin - distances.sqrt()).pow(2))  # HANG: sqrt
        return losses.mean()


class SiameseNet(L.LightningModule):
    def __init__(self, lr: float = 1e-3) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.embed = nn.Sequential(nn.Conv2d(1, 8, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                                   nn.Linear(8 * 5 * 5, 32), nn.ReLU(), nn.Linear(32, 8))
        self.criterion = ContrastiveLoss()

    def training_step(self, batch, batch_idx):
        a, b, same = batch
        loss = self.criterion(self.embed(a), self.embed(b), same)
        print(f"[rank {self.global_rank}] epoch {self.current_epoch} batch {batch_idx} "
              f"loss {loss.item():.4f}", flush=True)
        return loss

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=self.hparams.lr)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=32)
    args = parser.parse_args()
    L.seed_everything(0)
    data = PairDataset(n_images=64, n_pairs=768, n_classes=6)
    loader = DataLoader(data, batch_size=args.batch_size, shuffle=True)
    trainer = L.Trainer(accelerator="cpu", devices=2, strategy="ddp", max_epochs=args.epochs,
                        detect_anomaly=True,  # NaNs seen in an earlier run: find where
                        logger=False, enable_checkpointing=False, enable_progress_bar=False,
                        enable_model_summary=False)
    trainer.fit(SiameseNet(), loader)


if __name__ == "__main__":
    main()
