"""A Lightning DDP run with a callback that reports a checkpoint to an experiment tracker every
other epoch; the callback saves only on global rank 0, as one would for a file write. But
`trainer.save_checkpoint` synchronises the ranks (the strategy's barrier), so rank 0 waits in it
while rank 1 has gone on to the next epoch.

Written from https://github.com/ray-project/ray/issues/56997 ("Trainer save_checkpoint needs to
be called in all train workers": the documented example "hangs", because save_checkpoint calls
`self.strategy.barrier()` and sits under a `global_rank == 0` guard) and the same advice in
Lightning's docs on manual saving with strategies.
"""

import os
import tempfile

import lightning as L
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


class Regressor(L.LightningModule):
    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1))

    def training_step(self, batch, batch_idx):
        x, y = batch
        return nn.functional.mse_loss(self.net(x), y)

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-3)


class ReportCheckpoint(L.Callback):
    def __init__(self, every: int) -> None:
        self.every = every
        self.directory = tempfile.mkdtemp(prefix="reports-")

    def on_train_epoch_end(self, trainer, pl_module):
        should_checkpoint = (trainer.current_epoch + 1) % self.every == 0
        if trainer.global_rank == 0 and should_checkpoint:
            path = os.path.join(self.directory, f"epoch-{trainer.current_epoch}.ckpt")
            trainer.save_checkpoint(path, weights_only=False)  # HANG: save
            print(f"reported {path}", flush=True)


def main() -> None:
    L.seed_everything(0)
    x = torch.randn(512, 8)
    data = DataLoader(TensorDataset(x, x.sum(1, keepdim=True)), batch_size=32)
    trainer = L.Trainer(accelerator="cpu", devices=2, strategy="ddp", max_epochs=6,
                        enable_progress_bar=False, logger=False, enable_checkpointing=False,
                        enable_model_summary=False, callbacks=[ReportCheckpoint(every=2)])
    trainer.fit(Regressor(), data)


if __name__ == "__main__":
    main()
