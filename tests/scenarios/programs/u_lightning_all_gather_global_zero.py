"""A Lightning DDP job (2 CPU processes) that computes a ranking metric over the whole
validation set: the scores of each validation step are kept, and at the end of the epoch the
main process gathers every rank's scores with `self.all_gather` inside
`if self.trainer.is_global_zero:` and computes the metric. Only rank 0 enters the all_gather;
rank 1 leaves the validation epoch (the sanity check, first of all) and goes on.

Written from https://github.com/Lightning-AI/pytorch-lightning/issues/16541 (`self.all_gather`
in the epoch-end hook "hangs forever" when called under `is_global_zero`, and finishes when the
guard is removed). The report used `test_epoch_end`, which Lightning 2 replaced with the
`on_*_epoch_end` hooks; this program uses `on_validation_epoch_end`.
"""

import lightning as L
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


class Ranker(L.LightningModule):
    def __init__(self) -> None:
        super().__init__()
        self.scorer = nn.Sequential(nn.Linear(24, 48), nn.ReLU(), nn.Linear(48, 1))
        self.val_scores: list[torch.Tensor] = []
        self.val_labels: list[torch.Tensor] = []

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = nn.functional.binary_cross_entropy_with_logits(self.scorer(x).squeeze(-1), y)
        self.log("train_loss", loss)
        if batch_idx % 4 == 0:
            print(f"rank {self.global_rank} epoch {self.current_epoch} step {batch_idx} "
                  f"loss {loss.item():.4f}", flush=True)
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        self.val_scores.append(self.scorer(x).squeeze(-1))
        self.val_labels.append(y)

    def on_validation_epoch_end(self):
        scores = torch.cat(self.val_scores)
        labels = torch.cat(self.val_labels)
        self.val_scores.clear()
        self.val_labels.clear()
        if self.trainer.is_global_zero:
            all_scores = self.all_gather(scores).flatten()  # HANG: all-gather
            all_labels = self.all_gather(labels).flatten()
            order = all_scores.argsort(descending=True)
            top = all_labels[order][: len(order) // 10]
            print(f"epoch {self.current_epoch} precision@10% {top.mean().item():.3f}", flush=True)

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-3)


def make_loader(seed: int, size: int) -> DataLoader:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(size, 24, generator=g)
    y = (x[:, :3].sum(-1) > 0).float()
    return DataLoader(TensorDataset(x, y), batch_size=32)


def main() -> None:
    L.seed_everything(0)
    trainer = L.Trainer(accelerator="cpu", devices=2, strategy="ddp", max_epochs=4,
                        enable_progress_bar=False, logger=False, enable_checkpointing=False,
                        enable_model_summary=False)
    trainer.fit(Ranker(), make_loader(0, 1024), make_loader(1, 256))


if __name__ == "__main__":
    main()
