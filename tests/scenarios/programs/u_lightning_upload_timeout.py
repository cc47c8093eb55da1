"""A Lightning DDP job with a short DDP timeout whose epoch-end callback uploads the weights to
remote storage from rank 0. The upload takes longer than the timeout: rank 1, already in the
next epoch's first collective, gives up waiting and the job fails.

Written from https://github.com/advimman/lama/issues/324 (a Lightning DDP job that died with a
collective timeout while rank 0 was writing its checkpoint). Mechanism: a collective that
exceeds the process-group timeout because one rank is busy elsewhere.
"""

import io
import time
from datetime import timedelta

import lightning as L
import torch
from lightning.pytorch.strategies import DDPStrategy
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


class Regressor(L.LightningModule):
    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1))

    def training_step(self, batch, batch_idx):
        x, y = batch
        return nn.functional.mse_loss(self.net(x), y)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.01)


class UploadWeights(L.Callback):
    def on_train_epoch_end(self, trainer, pl_module):
        if not trainer.is_global_zero:
            return
        buffer = io.BytesIO()
        torch.save(pl_module.state_dict(), buffer)
        for part in range(30):
            time.sleep(1.0)  # HANG: upload  (sending one part to the bucket)
            print(f"epoch {trainer.current_epoch}: uploaded part {part + 1}/30", flush=True)


def main() -> None:
    L.seed_everything(0)
    data = torch.randn(256, 17)
    strategy = DDPStrategy(timeout=timedelta(seconds=15))  # HANG: timeout
    trainer = L.Trainer(accelerator="cpu", devices=2, strategy=strategy, max_epochs=3,
                        callbacks=[UploadWeights()], enable_progress_bar=False, logger=False,
                        enable_checkpointing=False, enable_model_summary=False)
    trainer.fit(Regressor(), DataLoader(TensorDataset(data[:, :16], data[:, 16:]), batch_size=16))


if __name__ == "__main__":
    main()
