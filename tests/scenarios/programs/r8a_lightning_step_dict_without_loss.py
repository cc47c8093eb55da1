"""Regression of house prices from tabular features with PyTorch Lightning, on the CPU
(`python train.py`). The LightningModule's `training_step` was ported from an older Lightning
tutorial: it returns a dict with the loss under the key "train_loss" and a "log" dict for
TensorBoard, the pre-1.0 way of logging.

Written from https://github.com/Lightning-AI/pytorch-lightning/issues/3041 ("RuntimeError: No
`loss` value in the dictionary returned from `model.training_step()`": the user's
training_step returned {'train_loss': loss, 'log': ...}, and the maintainers answer that the
value to minimise must sit under the key 'loss'). Same mistake here: automatic optimisation
looks for "loss" in the returned dict, finds none, and Lightning raises
MisconfigurationException from its own loop code on the very first step. The user's
`training_step` has already returned by then, so its line is not in the traceback; its return
statement is the line to fix.
"""

import argparse

import lightning as L
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

FEATURES = 13


class PriceRegressor(L.LightningModule):
    def __init__(self, lr: float = 1e-2) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.net = nn.Sequential(nn.Linear(FEATURES, 64), nn.ReLU(), nn.Linear(64, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x).squeeze(1)

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = nn.functional.l1_loss(self(x), y)
        tensorboard_logs = {"train_loss": loss}
        return {"train_loss": loss, "log": tensorboard_logs}  # HANG: return-dict

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=self.hparams.lr)


def make_data(n: int) -> TensorDataset:
    g = torch.Generator().manual_seed(0)
    x = torch.randn(n, FEATURES, generator=g)
    w = torch.randn(FEATURES, generator=g)
    y = x @ w + 0.1 * torch.randn(n, generator=g)
    return TensorDataset(x, y)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1024)
    parser.add_argument("--epochs", type=int, default=5)
    args = parser.parse_args()
    L.seed_everything(0)
    torch.set_num_threads(1)
    loader = DataLoader(make_data(args.rows), batch_size=32, shuffle=True)
    trainer = L.Trainer(accelerator="cpu", devices=1, max_epochs=args.epochs, logger=False,
                        enable_checkpointing=False, enable_progress_bar=False,
                        enable_model_summary=False)
    trainer.fit(PriceRegressor(), loader)
    print("finished", flush=True)


if __name__ == "__main__":
    main()
