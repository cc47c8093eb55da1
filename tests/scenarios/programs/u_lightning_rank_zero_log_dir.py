"""A Lightning DDP job whose `@rank_zero_only` hook saves the run configuration under
`trainer.log_dir` when training starts. `Trainer.log_dir` broadcasts the directory from rank 0
so that every rank agrees on it: called on rank 0 only, that broadcast waits for rank 1, which
has already gone on into the training loop's own collectives.

Written from https://github.com/Lightning-AI/pytorch-lightning/issues/18148 (calling
`trainer.log_dir` in `rank_zero_only` with DDP makes the program freeze after the first step).
Mechanism: a collective hidden in a property, reached by rank 0 only.
"""

import json
import os

import lightning as L
import torch
from lightning.pytorch.utilities import rank_zero_only
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


class Regressor(L.LightningModule):
    def __init__(self, hidden: int = 32, lr: float = 0.01) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.net = nn.Sequential(nn.Linear(16, hidden), nn.ReLU(), nn.Linear(hidden, 1))

    def training_step(self, batch, batch_idx):
        x, y = batch
        return nn.functional.mse_loss(self.net(x), y)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=self.hparams.lr)

    @rank_zero_only
    def on_train_epoch_start(self):
        run_dir = self.trainer.log_dir  # HANG: log-dir
        os.makedirs(run_dir, exist_ok=True)
        with open(os.path.join(run_dir, "config.json"), "w") as out:
            json.dump(dict(self.hparams), out)


def main() -> None:
    L.seed_everything(0)
    data = torch.randn(256, 17)
    trainer = L.Trainer(accelerator="cpu", devices=2, strategy="ddp", max_epochs=2,
                        enable_progress_bar=False, logger=False, enable_checkpointing=False,
                        enable_model_summary=False)
    trainer.fit(Regressor(), DataLoader(TensorDataset(data[:, :16], data[:, 16:]), batch_size=16))


if __name__ == "__main__":
    main()
