"""A Lightning DDP job on an IterableDataset that shards its files by rank itself. The files
hold different numbers of records, so rank 1 runs out of batches first; it reaches the epoch-end
hook, whose all_gather of the samples seen waits for rank 0, still inside its epoch.

Written from https://github.com/Lightning-AI/pytorch-lightning/issues/20404 (how to deal with
uneven inputs in DDP with sharded data without hanging). Mechanism: ranks with different numbers
of batches.
"""

import lightning as L
import torch
from torch import nn
from torch.utils.data import DataLoader, IterableDataset, get_worker_info


class ShardedRecords(IterableDataset):
    """Each rank reads every other file; the files are not the same size."""

    def __init__(self, file_sizes: list[int], rank: int, world: int) -> None:
        self.files = file_sizes[rank::world]  # HANG: shard

    def __iter__(self):
        assert get_worker_info() is None
        for file_index, records in enumerate(self.files):
            generator = torch.Generator().manual_seed(file_index)
            for _ in range(records):
                row = torch.randn(17, generator=generator)
                yield row[:16], row[16:]


class Regressor(L.LightningModule):
    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1))
        self.seen = 0

    def training_step(self, batch, batch_idx):
        x, y = batch
        self.seen += len(x)
        return nn.functional.mse_loss(self.net(x), y)

    def on_train_epoch_end(self):
        total = self.all_gather(torch.tensor(self.seen)).sum()  # HANG: epoch-end
        print(f"rank {self.global_rank}: epoch {self.current_epoch}, {int(total)} samples",
              flush=True)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.01)


def main() -> None:
    L.seed_everything(0)
    trainer = L.Trainer(accelerator="cpu", devices=2, strategy="ddp", max_epochs=2,
                        enable_progress_bar=False, logger=False, enable_checkpointing=False,
                        enable_model_summary=False)
    records = ShardedRecords([160, 96, 160, 64], trainer.global_rank, trainer.world_size)
    trainer.fit(Regressor(), DataLoader(records, batch_size=16))


if __name__ == "__main__":
    main()
