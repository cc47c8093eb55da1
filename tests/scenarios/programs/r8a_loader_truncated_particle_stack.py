"""Train a small denoising CNN on cryo-EM style particle images. The particles live in raw
"stack" files (a fixed 1024-byte header followed by float32 images of BOX x BOX pixels, one
after the other); the dataset indexes (file, slot) pairs once, from the metadata table, and
reads each particle lazily in `__getitem__` by seeking to its offset and decoding it with
`np.fromfile(...).reshape(...)`. Two DataLoader workers do the reading.

Written from https://github.com/yuehuang2023/cryoNeFEN/issues/14 ("ValueError: Caught
ValueError in DataLoader worker process 0 ... cannot reshape array of size 0 into shape
(288,288)"), where one particle stack on disk was shorter than its metadata said and the lazy
reader decoded nothing for the missing particles. Same mechanism here: stack 3 was cut short
by an interrupted copy, so it holds only part of the particles the metadata table lists. The
worker that reads the first missing slot gets an empty array from `np.fromfile`, the reshape
raises ValueError inside the worker, and the DataLoader re-raises it in the training loop,
which ends the job.
"""

import argparse
import os
import shutil
import tempfile

import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

BOX = 32
HEADER_BYTES = 1024
PER_STACK = 48


class ParticleStacks(Dataset):
    """Particles addressed by (stack file, slot), read lazily from the raw stacks."""

    def __init__(self, root: str, n_stacks: int) -> None:
        # The metadata table says every stack holds PER_STACK particles.
        self.index = [(os.path.join(root, f"stack_{s:03d}.mrcs"), slot)
                      for s in range(n_stacks) for slot in range(PER_STACK)]

    def __len__(self) -> int:
        return len(self.index)

    def _read(self, path: str, slot: int) -> np.ndarray:
        with open(path, "rb") as f:
            f.seek(HEADER_BYTES + slot * BOX * BOX * 4)
            image = np.fromfile(f, dtype=np.float32, count=BOX * BOX).reshape(BOX, BOX)  # HANG: decode
        return image

    def __getitem__(self, i: int):
        path, slot = self.index[i]
        clean = torch.from_numpy(self._read(path, slot).copy())
        clean = (clean - clean.mean()) / (clean.std() + 1e-6)
        g = torch.Generator().manual_seed(i)
        noisy = clean + 0.5 * torch.randn(clean.shape, generator=g)
        return noisy.unsqueeze(0), clean.unsqueeze(0)


def write_stacks(root: str, n_stacks: int, truncated: int) -> None:
    rng = np.random.default_rng(0)
    yy, xx = np.mgrid[:BOX, :BOX].astype(np.float32)
    for s in range(n_stacks):
        images = []
        for _ in range(PER_STACK):
            cy, cx = rng.uniform(10, 22, size=2)
            blob = np.exp(-((yy - cy) ** 2 + (xx - cx) ** 2) / (2 * rng.uniform(3, 6) ** 2))
            images.append(blob.astype(np.float32))
        data = np.stack(images).tobytes()
        if s == truncated:
            data = data[: len(data) * 2 // 3]  # the copy of this stack was interrupted
        with open(os.path.join(root, f"stack_{s:03d}.mrcs"), "wb") as f:
            f.write(b"\0" * HEADER_BYTES)
            f.write(data)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--stacks", type=int, default=6)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=16)
    args = parser.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    root = tempfile.mkdtemp(prefix="particles-")
    try:
        write_stacks(root, args.stacks, truncated=3)
        loader = DataLoader(ParticleStacks(root, args.stacks), batch_size=args.batch_size,
                            shuffle=False, num_workers=2)
        model = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(),
                              nn.Conv2d(16, 16, 3, padding=1), nn.ReLU(),
                              nn.Conv2d(16, 1, 3, padding=1))
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
        for epoch in range(args.epochs):
            for step, (noisy, clean) in enumerate(loader):
                loss = nn.functional.mse_loss(model(noisy), clean)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                print(f"epoch {epoch} step {step} loss {loss.item():.4f}", flush=True)
        torch.save(model.state_dict(), os.path.join(root, "denoiser.pt"))
        print("training finished", flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
