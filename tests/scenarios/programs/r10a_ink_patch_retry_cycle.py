"""Ink-detection training on patches cut from a scanned papyrus fragment (a small 2D U-Net-ish
segmenter on CPU).

Written from https://github.com/ScrollPrize/villa/issues/1482 ("native patch retry can enter
deterministic cycles and hang workers"): when a patch has too little papyrus under it,
`__getitem__` retries with a replacement index drawn from an RNG seeded by the *current* index,
with no visited set and no attempt bound. The replacement relation is a fixed graph, so a chain
of empty patches can close into a cycle of empty patches; the loop then walks that cycle for
ever at 100% CPU and the training step never gets its batch.
"""

import random

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

GRID, PATCH, SEED = 20, 16, 17
MIN_PAPYRUS = 0.35


def scan_fragment() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    size = GRID * PATCH
    yy, xx = torch.meshgrid(torch.arange(size), torch.arange(size), indexing="ij")
    # the fragment is a thin diagonal strip; most of the scan is empty background
    papyrus = ((yy - xx).abs() < size // 10).float()
    surface = torch.rand(1, size, size, generator=g) * papyrus
    ink = ((torch.rand(size, size, generator=g) > 0.7).float() * papyrus)
    return surface, papyrus, ink


class InkPatches(Dataset):
    def __init__(self) -> None:
        self.surface, self.papyrus, self.ink = scan_fragment()
        self.patches = [(r * PATCH, c * PATCH) for r in range(GRID) for c in range(GRID)]

    def __len__(self) -> int:
        return len(self.patches)

    def _native_sample(self, patch):
        y, x = patch
        mask = self.papyrus[y : y + PATCH, x : x + PATCH]
        if mask.mean().item() < MIN_PAPYRUS:
            return None  # mostly background: not usable for training
        image = self.surface[:, y : y + PATCH, x : x + PATCH]
        return image, self.ink[y : y + PATCH, x : x + PATCH].unsqueeze(0), mask.unsqueeze(0)

    def __getitem__(self, requested_index: int):
        current_index = requested_index
        while True:  # HANG: retry-loop
            sample = self._native_sample(self.patches[current_index])
            if sample is not None:
                return sample
            # deterministic replacement so that epochs are reproducible
            rng = random.Random(SEED + current_index * 7919)  # HANG: replacement
            replacement = current_index
            while replacement == current_index:
                replacement = rng.randrange(len(self.patches))
            current_index = replacement


def main() -> None:
    torch.manual_seed(0)
    torch.set_num_threads(1)
    dataset = InkPatches()
    loader = DataLoader(
        dataset, batch_size=8, shuffle=True, generator=torch.Generator().manual_seed(2)
    )
    model = nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(),
        nn.Conv2d(16, 16, 3, padding=1), nn.ReLU(),
        nn.Conv2d(16, 1, 1),
    )
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    for epoch in range(3):
        for step, (image, ink, mask) in enumerate(loader):
            logits = model(image)
            loss = nn.functional.binary_cross_entropy_with_logits(logits, ink, weight=mask)
            opt.zero_grad()
            loss.backward()
            opt.step()
            print(f"epoch {epoch} step {step} loss {loss.item():.4f}", flush=True)
    torch.save(model.state_dict(), "/tmp/ink_unet.pt")
    print("done", flush=True)


if __name__ == "__main__":
    main()
