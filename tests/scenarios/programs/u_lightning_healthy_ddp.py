"""A healthy two-process Lightning DDP job: a small classifier with a validation loop whose loss
is logged with `sync_dist=True`, early stopping on it, and a rank-0 callback that writes a
summary and then meets the other rank at `trainer.strategy.barrier()` outside the rank check.

The control for the Lightning scenarios: it must end `completed` with no error-level finding.
The barrier-outside-the-guard pattern is the fix given in
https://github.com/talmolab/sleap-nn/pull/437.
"""

import lightning as L
import torch
from lightning.pytorch.callbacks import EarlyStopping
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


class Classifier(L.LightningModule):
    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = nn.functional.cross_entropy(self.net(x), y)
        self.log("train_loss", loss)
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        self.log("val_loss", nn.functional.cross_entropy(self.net(x), y), sync_dist=True)

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-3)


class EpochSummary(L.Callback):
    def on_train_epoch_end(self, trainer, pl_module):
        if trainer.is_global_zero:
            print(f"epoch {trainer.current_epoch} done", flush=True)
        trainer.strategy.barrier()


def loader(seed: int) -> DataLoader:
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(256, 16, generator=generator)
    y = torch.randint(0, 4, (256,), generator=generator)
    return DataLoader(TensorDataset(x, y), batch_size=16)


def main() -> None:
    L.seed_everything(0)
    trainer = L.Trainer(
        accelerator="cpu", devices=2, strategy="ddp", max_epochs=3,
        callbacks=[EpochSummary(), EarlyStopping("val_loss", patience=5)],
        enable_progress_bar=False, logger=False, enable_checkpointing=False,
    )
    trainer.fit(Classifier(), loader(0), loader(1))


if __name__ == "__main__":
    main()
