"""Tabular classifier in Lightning, DDP on two CPU processes (`python train.py`).

Written from https://github.com/microsoft/InnerEye-DeepLearning/issues/470 (see also
Lightning-AI/pytorch-lightning#8130): a ValueError raised in training_step on rank 1 only. The
label sanity check fires on a row that only rank 1's DistributedSampler shard holds (a row of
the export labelled 10, "unknown"); rank 1 dies with the traceback while rank 0 waits for it in
the gradient all-reduce, which gloo then ends with "Connection closed by peer".
"""

import argparse

import lightning as L
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

NUM_FEATURES = 12


class ExportedRows(Dataset):
    """Rows of a (synthetic) feature export; label 10 marks rows nobody annotated."""

    def __init__(self, n_rows: int, num_classes: int, unknown_rows: tuple[int, ...]) -> None:
        g = torch.Generator().manual_seed(7)
        self.x = torch.randn(n_rows, NUM_FEATURES, generator=g)
        self.y = (self.x[:, :3].sum(1) * 2).long().clamp(0, num_classes - 1)
        for row in unknown_rows:
            self.y[row] = 10

    def __len__(self) -> int:
        return len(self.y)

    def __getitem__(self, i):
        return self.x[i], self.y[i]


class RowClassifier(L.LightningModule):
    def __init__(self, num_classes: int = 5, lr: float = 1e-2) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.net = nn.Sequential(nn.Linear(NUM_FEATURES, 64), nn.ReLU(), nn.Linear(64, num_classes))

    def training_step(self, batch, batch_idx):
        x, y = batch
        if y.max() >= self.hparams.num_classes:
            raise ValueError(f"label {int(y.max())} out of range for "  # HANG: raise
                             f"{self.hparams.num_classes} classes (batch {batch_idx})")
        loss = nn.functional.cross_entropy(self.net(x), y)
        if batch_idx % 2 == 0:
            print(f"[rank {self.global_rank}] epoch {self.current_epoch} batch {batch_idx} "
                  f"loss {loss.item():.4f}", flush=True)
        return loss

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=self.hparams.lr)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=256)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--epochs", type=int, default=3)
    args = parser.parse_args()
    L.seed_everything(0)
    data = ExportedRows(args.rows, num_classes=5, unknown_rows=(99,))
    loader = DataLoader(data, batch_size=args.batch_size, shuffle=False)
    trainer = L.Trainer(accelerator="cpu", devices=2, strategy="ddp", max_epochs=args.epochs,
                        logger=False, enable_checkpointing=False, enable_progress_bar=False,
                        enable_model_summary=False)
    trainer.fit(RowClassifier(), loader)
    print(f"[rank {trainer.global_rank}] finished", flush=True)


if __name__ == "__main__":
    main()
