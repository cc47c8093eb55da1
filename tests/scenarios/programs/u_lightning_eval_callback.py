"""A Lightning DDP job with a `rank_zero_only` callback that evaluates the model on a few
reference songs every 10 steps. The songs are streamed from an object store that accepts the
connection but never answers, and the read has no timeout: rank 0 sits in `recv` in the callback
while rank 1 has gone on to the next step and waits for rank 0 in a collective.

Written from https://github.com/Lightning-AI/pytorch-lightning/issues/16417 (DDP stuck after a
`@rank_zero_only` evaluation callback; removing the decorator made it go away). Mechanism: one
rank stuck outside any collective while its peer waits inside one.
"""

import socket

import lightning as L
import torch
from lightning.pytorch.utilities import rank_zero_only
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


class Separator(L.LightningModule):
    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, 64))

    def training_step(self, batch, batch_idx):
        (mixture,) = batch
        return nn.functional.l1_loss(self.net(mixture), mixture * 0.5)

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-3)


class EvaluateOnReferenceSongs(L.Callback):
    def __init__(self, store: tuple[str, int], every: int = 10) -> None:
        self.store, self.every = store, every

    def fetch_song(self, name: str) -> torch.Tensor:
        with socket.create_connection(self.store) as connection:
            connection.sendall(f"GET /musdb18/test/{name}.wav\n".encode())
            payload = connection.recv(1 << 20)  # HANG: fetch
        return torch.frombuffer(bytearray(payload), dtype=torch.float32)

    @rank_zero_only
    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        if trainer.global_step % self.every == 0:
            song = self.fetch_song("al_james-schoolboy_fascination")
            print(f"step {trainer.global_step}: sdr on reference {song.numel()}", flush=True)


def main() -> None:
    store = socket.socket()
    store.bind(("127.0.0.1", 0))
    store.listen(8)  # the object store's front end: it accepts, nobody answers
    L.seed_everything(0)
    mixtures = DataLoader(TensorDataset(torch.randn(640, 64)), batch_size=16)
    trainer = L.Trainer(
        accelerator="cpu", devices=2, strategy="ddp", max_epochs=1,
        callbacks=[EvaluateOnReferenceSongs(store.getsockname())], enable_progress_bar=False,
        logger=False, enable_checkpointing=False, enable_model_summary=False,
    )
    trainer.fit(Separator(), mixtures)


if __name__ == "__main__":
    main()
