"""A Lightning job reading its samples through a table client that drives its I/O on an
asyncio event loop in a background thread. The client is opened in the DataModule's `setup`,
in the main process; the DataLoader then forks its workers, which inherit the client but not
its loop thread, so a worker's first read waits for a future that nothing will ever complete.

Written from https://github.com/lance-format/lance/issues/3640 (a Lance dataset opened in the
main process deadlocks PyTorch DataLoader workers with `num_workers > 0`; lancedb's
`BackgroundEventLoop` runs its asyncio loop on a thread that does not survive fork).
Mechanism: a DataLoader worker blocked in dataset code forever.
"""

import asyncio
import threading

import lightning as L
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset


class TableClient:
    """Runs every read as a coroutine on its own event-loop thread, like async table SDKs do."""

    def __init__(self, rows: torch.Tensor) -> None:
        self.rows = rows
        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self.loop.run_forever, name="table-io", daemon=True).start()

    async def _take(self, index: int) -> torch.Tensor:
        await asyncio.sleep(0)  # the network round trip
        return self.rows[index]

    def take(self, index: int) -> torch.Tensor:
        future = asyncio.run_coroutine_threadsafe(self._take(index), self.loop)
        return future.result()  # HANG: take


class TableDataset(Dataset):
    def __init__(self, client: TableClient, size: int) -> None:
        self.client, self.size = client, size

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, index: int):
        row = self.client.take(index)
        return row[:16], row[16:]


class TableDataModule(L.LightningDataModule):
    def setup(self, stage: str) -> None:
        rows = torch.randn(512, 17, generator=torch.Generator().manual_seed(0))
        self.client = TableClient(rows)
        self.client.take(0)  # check the connection

    def train_dataloader(self) -> DataLoader:
        return DataLoader(TableDataset(self.client, 512), batch_size=32, num_workers=2,
                          multiprocessing_context="fork")


class Regressor(L.LightningModule):
    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1))

    def training_step(self, batch, batch_idx):
        x, y = batch
        return nn.functional.mse_loss(self.net(x), y)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.01)


def main() -> None:
    L.seed_everything(0)
    trainer = L.Trainer(accelerator="cpu", devices=1, max_epochs=2, enable_progress_bar=False,
                        logger=False, enable_checkpointing=False, enable_model_summary=False)
    trainer.fit(Regressor(), datamodule=TableDataModule())


if __name__ == "__main__":
    main()
