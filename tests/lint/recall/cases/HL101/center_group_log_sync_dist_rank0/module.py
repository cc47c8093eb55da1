# case: HL101 real https://github.com/dvl-tum/center-group/pull/2
# Validation metrics were logged only when `self.world_rank == 0`, with cross-process
# reduction on: Lightning waited for the other processes to log the same value.
import pytorch_lightning as pl
import torch


class GroupingModule(pl.LightningModule):
    def __init__(self, net):
        super().__init__()
        self.net = net
        self.world_rank = 0

    def validation_epoch_end(self, outputs):
        ap = torch.stack([o["ap"] for o in outputs]).mean()
        if self.world_rank == 0:
            self.log("val/ap", ap, sync_dist=True)  # expect: HL101
