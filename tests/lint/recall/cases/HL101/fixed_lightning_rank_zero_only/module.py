# case: HL101 fixed https://github.com/dvl-tum/center-group/pull/2
import lightning as L


class Classifier(L.LightningModule):
    def validation_epoch_end(self, outputs):
        if self.global_rank == 0:
            self.log("val/ap", outputs[0], rank_zero_only=True)
