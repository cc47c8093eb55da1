"""Healthy: image-classification training whose DataLoader workers decode slowly (each batch
takes a worker about 3-4 s: reading plus a decode/resize that costs CPU), and a validation
pass after the first epoch that prints nothing until it is done (about 13-15 s). The job then
trains one more short epoch and exits 0 in well under a minute.
"""

import time

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset


class SlowDecodeImages(Dataset):
    def __init__(self, size: int, seed: int) -> None:
        self.size, self.seed = size, seed

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, index: int):
        g = torch.Generator().manual_seed(self.seed * 100_000 + index)
        time.sleep(0.3)  # reading the JPEG from network storage
        raw = torch.rand(3, 256, 256, generator=g)
        for _ in range(50):  # decode + resize + colour jitter
            raw = nn.functional.avg_pool2d(raw.unsqueeze(0), 3, stride=1, padding=1).squeeze(0)
        image = nn.functional.interpolate(raw.unsqueeze(0), size=(32, 32), mode="bilinear",
                                          align_corners=False).squeeze(0)
        return image, index % 10


def main() -> None:
    torch.manual_seed(0)
    train_loader = DataLoader(SlowDecodeImages(64, seed=1), batch_size=8, shuffle=True,
                              num_workers=2)
    val_loader = DataLoader(SlowDecodeImages(64, seed=2), batch_size=8, num_workers=2)
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(4),
                          nn.Flatten(), nn.Linear(128, 10))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)

    for epoch in range(2):
        model.train()
        for step, (x, y) in enumerate(train_loader):
            loss = nn.functional.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            print(f"epoch {epoch} step {step} loss {loss.item():.4f}", flush=True)
            if epoch == 1 and step == 3:
                break
        if epoch == 0:
            model.eval()
            total, correct, count = 0.0, 0, 0
            with torch.no_grad():
                for x, y in val_loader:
                    logits = model(x)
                    total += nn.functional.cross_entropy(logits, y, reduction="sum").item()
                    correct += (logits.argmax(1) == y).sum().item()
                    count += len(y)
            print(f"epoch {epoch} val loss {total / count:.4f} acc {correct / count:.3f}",
                  flush=True)
    torch.save(model.state_dict(), "u_healthy_slow_decode_val.pt")
    print("done", flush=True)


if __name__ == "__main__":
    main()
