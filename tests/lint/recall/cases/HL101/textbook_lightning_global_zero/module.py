# case: HL101 textbook
# Lightning: a synced log and an all_gather inside a global-zero branch.
import lightning as L
import torch


class Classifier(L.LightningModule):
    def validation_step(self, batch, batch_idx):
        x, y = batch
        acc = (self(x).argmax(-1) == y).float().mean()
        if self.trainer.is_global_zero:
            self.log("val_acc", acc, sync_dist=True)  # expect: HL101
            everything = self.all_gather(acc)  # expect: HL101
            print(everything)
