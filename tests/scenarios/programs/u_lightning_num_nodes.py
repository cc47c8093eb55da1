"""A Lightning DDP job whose Trainer arguments were copied from the two-node cluster config and
run on one machine: `num_nodes=2` makes the world size 4, this machine starts ranks 0 and 1, and
both wait in the rendezvous for ranks 2 and 3, which nobody starts.

Written from https://github.com/Lightning-AI/pytorch-lightning/issues/10098 (multi-node DDP
training hanging when initializing: it stops at "initializing ddp ... 2/4"). Mechanism: peers
that never join.
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
        return nn.functional.mse_loss(self.net(x), y)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.01)


CLUSTER = {"accelerator": "cpu", "devices": 2, "num_nodes": 2, "strategy": "ddp"}  # HANG: nodes


def main() -> None:
    L.seed_everything(0)
    data = torch.randn(256, 17)
    trainer = L.Trainer(**CLUSTER, max_epochs=2,  # HANG: nodes
                        enable_progress_bar=False, logger=False, enable_checkpointing=False)
    trainer.fit(Regressor(), DataLoader(TensorDataset(data[:, :16], data[:, 16:]), batch_size=16))


if __name__ == "__main__":
    main()
