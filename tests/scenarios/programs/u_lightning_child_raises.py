"""A Lightning DDP job whose validation step checks each batch and raises on a malformed one.
Only rank 1 gets the malformed batch: its process dies with the exception while rank 0 goes on.

Written from https://github.com/Lightning-AI/pytorch-lightning/issues/8130 (DDP script hangs
forever if one child process dies: the error appears in the output, the main script never
ends). Mechanism: a rank exits while its peer waits for it.
"""

import lightning as L
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset


class Scans(Dataset):
    def __init__(self, size: int, corrupt: int | None = None) -> None:
        self.data = torch.randn(size, 32, generator=torch.Generator().manual_seed(0))
        if corrupt is not None:
            self.data[corrupt] = float("nan")  # one scan with missing voxels

    def __len__(self) -> int:
        return len(self.data)

    def __getitem__(self, index: int) -> torch.Tensor:
        return self.data[index]


class AutoEncoder(L.LightningModule):
    def __init__(self) -> None:
        super().__init__()
        self.encoder = nn.Linear(32, 8)
        self.decoder = nn.Linear(8, 32)

    def training_step(self, batch, batch_idx):
        return nn.functional.mse_loss(self.decoder(self.encoder(batch)), batch)

    def validation_step(self, batch, batch_idx):
        if torch.isnan(batch).any():
            raise ValueError(f"batch {batch_idx} holds a corrupt scan")  # HANG: raise
        self.log("val_loss", nn.functional.mse_loss(self.decoder(self.encoder(batch)), batch))

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-3)


def main() -> None:
    L.seed_everything(0)
    trainer = L.Trainer(accelerator="cpu", devices=2, strategy="ddp", max_epochs=3,
                        num_sanity_val_steps=0, enable_progress_bar=False, logger=False,
                        enable_checkpointing=False, enable_model_summary=False)
    train = DataLoader(Scans(256), batch_size=16)
    val = DataLoader(Scans(64, corrupt=33), batch_size=16)  # index 33: rank 1's shard
    trainer.fit(AutoEncoder(), train, val)


if __name__ == "__main__":
    main()
