"""Curriculum training that adds harder samples to the dataset after each epoch.

From https://github.com/pytorch/pytorch/issues/97326 ("Change worker process's attribute while set
persistent_worker = True"). The dataset starts with the easy samples and `add_stage()` appends
the next difficulty level between epochs, in the main process. The DataLoader keeps its workers
alive across epochs (persistent_workers=True), so they still hold the first epoch's copy of the
dataset, while the sampler, which runs in the main process, draws indices over the grown one.
"""

import argparse

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

FEATURES = 24


def make_stage(level, n, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, FEATURES, generator=g)
    noise = 0.1 * (level + 1) * torch.randn(n, generator=g)
    y = ((x[:, : 4 + 4 * level].sum(dim=1) + noise) > 0).long()
    return list(zip(x, y, strict=True))


class CurriculumDataset(Dataset):
    def __init__(self, per_stage):
        self.per_stage = per_stage
        self.level = 0
        self.samples = make_stage(0, per_stage, seed=0)

    def add_stage(self):
        self.level += 1
        harder = make_stage(self.level, self.per_stage, seed=self.level)
        self.samples += harder  # HANG: grow-in-main

    def __len__(self):
        return len(self.samples)

    def __getitem__(self, i):
        x, y = self.samples[i]  # HANG: stale-copy-index
        return x, y


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--per-stage", type=int, default=512)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()

    dataset = CurriculumDataset(args.per_stage)
    loader = DataLoader(
        dataset,
        batch_size=args.batch_size,
        shuffle=True,
        num_workers=args.workers,
        persistent_workers=True,  # HANG: persistent-workers
    )
    model = nn.Sequential(nn.Linear(FEATURES, 64), nn.ReLU(), nn.Linear(64, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()

    for epoch in range(args.epochs):
        print(f"epoch {epoch}: level {dataset.level}, {len(dataset)} samples", flush=True)
        for step, (x, y) in enumerate(loader):  # HANG: loader-next
            loss = loss_fn(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            print(f"epoch {epoch} step {step} loss {loss.item():.4f}", flush=True)
        dataset.add_stage()


if __name__ == "__main__":
    main()
