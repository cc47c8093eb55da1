"""A Lightning DDP job (two CPU processes, started by Lightning itself) that trains a small
classifier and then scores it on the held-out test split. The test run was put under
`if trainer.is_global_zero:` so that the test metrics are computed once; afterwards every
process saves the final checkpoint.

Written from https://github.com/roboflow/rf-detr/issues/1505 (`run_test=True` never finishes on
multi-GPU DDP: after fit, `trainer.test()` is called from the main process alone, while the
other ranks have already returned; `trainer.test()` is collective under DDP, so the main process
blocks in its first collective). Here the other process is already waiting in
`save_checkpoint`'s barrier.
"""

import lightning as L
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


class Classifier(L.LightningModule):
    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(20, 32), nn.ReLU(), nn.Linear(32, 4))

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = nn.functional.cross_entropy(self.net(x), y)
        self.log("train_loss", loss)
        return loss

    def test_step(self, batch, batch_idx):
        x, y = batch
        logits = self.net(x)
        self.log("test_loss", nn.functional.cross_entropy(logits, y))
        self.log("test_acc", (logits.argmax(-1) == y).float().mean())

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-3)


def make_split(size: int, seed: int) -> TensorDataset:
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(size, 20, generator=generator)
    return TensorDataset(x, (x[:, :4].argmax(-1)))


def main() -> None:
    L.seed_everything(0)
    train = DataLoader(make_split(512, seed=0), batch_size=32, shuffle=True)
    test = DataLoader(make_split(128, seed=1), batch_size=32)
    model = Classifier()
    trainer = L.Trainer(accelerator="cpu", devices=2, strategy="ddp", max_epochs=3,
                        enable_progress_bar=False, logger=False, enable_checkpointing=False,
                        enable_model_summary=False)
    trainer.fit(model, train)

    if trainer.is_global_zero:
        results = trainer.test(model, test)  # HANG: test
        print(f"test accuracy {results[0]['test_acc']:.3f}", flush=True)

    trainer.save_checkpoint("classifier-final.ckpt")


if __name__ == "__main__":
    main()
