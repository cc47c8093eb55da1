"""A Lightning DDP job that gathers its validation predictions and computes the epoch metric on
rank 0 only, inside `if self.trainer.is_global_zero:`, logging it with `sync_dist=True`. The
metric exists on rank 0 alone, so when Lightning reduces the epoch's logged values rank 0 enters
an all_reduce for it that rank 1 never calls.

Written from https://github.com/Lightning-AI/pytorch-lightning/issues/19783 (DDP always hangs
in `on_validation_epoch_end` when the metric is computed and logged under `is_global_zero`).
Mechanism: a metric reduction that only rank 0 triggers.
"""

import lightning as L
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


class Classifier(L.LightningModule):
    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
        self.validation_step_outputs = []

    def training_step(self, batch, batch_idx):
        x, y = batch
        return nn.functional.cross_entropy(self.net(x), y)

    def validation_step(self, batch, batch_idx):
        x, y = batch
        self.validation_step_outputs.append((self.net(x).argmax(-1), y))

    def on_validation_epoch_end(self):
        if self.trainer.is_global_zero:
            predictions = torch.cat([p for p, _ in self.validation_step_outputs])
            labels = torch.cat([y for _, y in self.validation_step_outputs])
            accuracy = (predictions == labels).float().mean()
            self.log("val_accuracy", accuracy, sync_dist=True)  # HANG: log
        self.validation_step_outputs.clear()

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-3)


def loader(seed: int) -> DataLoader:
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(128, 16, generator=generator)
    return DataLoader(TensorDataset(x, torch.randint(0, 4, (128,), generator=generator)),
                      batch_size=16)


def main() -> None:
    L.seed_everything(0)
    trainer = L.Trainer(accelerator="cpu", devices=2, strategy="ddp", max_epochs=3,
                        enable_progress_bar=False, logger=False, enable_checkpointing=False,
                        enable_model_summary=False)
    trainer.fit(Classifier(), loader(0), loader(1))


if __name__ == "__main__":
    main()
