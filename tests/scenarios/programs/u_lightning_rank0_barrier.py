"""A Lightning DDP job whose epoch-end callback renders sample predictions on rank 0 and then
synchronises with `trainer.strategy.barrier()` inside the `is_global_zero` block, so rank 1
never reaches it and goes on into the next epoch's gradient all-reduce.

Written from https://github.com/talmolab/sleap-nn/pull/437 (visualisation callbacks that
reached `trainer.strategy.barrier()` on some ranks only froze multi-GPU training after each
epoch). Mechanism: a barrier that only rank 0 calls.
"""

import lightning as L
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


class Regressor(L.LightningModule):
    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1))

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = nn.functional.mse_loss(self.net(x), y)
        self.log("train_loss", loss)
        return loss

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.01)


class PredictionPlotter(L.Callback):
    """Writes a few predictions after every epoch, from the main process only."""

    def on_train_epoch_end(self, trainer, pl_module):
        if trainer.is_global_zero:
            with torch.no_grad():
                preview = pl_module.net(torch.randn(4, 16))
            print(f"epoch {trainer.current_epoch} preview {preview.flatten().tolist()}",
                  flush=True)
            trainer.strategy.barrier()  # HANG: barrier


def main() -> None:
    L.seed_everything(0)
    data = torch.randn(256, 17)
    loader = DataLoader(TensorDataset(data[:, :16], data[:, 16:]), batch_size=16)
    trainer = L.Trainer(
        accelerator="cpu", devices=2, strategy="ddp", max_epochs=5,
        callbacks=[PredictionPlotter()], enable_progress_bar=False, logger=False,
        enable_checkpointing=False, enable_model_summary=False,
    )
    trainer.fit(Regressor(), loader)


if __name__ == "__main__":
    main()
