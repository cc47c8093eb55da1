"""Training in a container whose open-file limit is small (`ulimit -n 64`, applied here by the
job itself). DataLoader workers hand each tensor of a batch to the trainer as a file
descriptor, which stays open as long as the tensor lives; the loop keeps every batch's targets
for an end-of-epoch metric, so the trainer runs out of descriptors."""

import resource

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset


class SampleDataset(Dataset):
    def __len__(self) -> int:
        return 2048

    def __getitem__(self, index: int):
        row = torch.randn(17, generator=torch.Generator().manual_seed(index))
        return row[:16], row[16:]


def main() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    loader = DataLoader(SampleDataset(), batch_size=8, num_workers=2)
    targets = []
    for step, (x, y) in enumerate(loader):
        loss = nn.functional.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        targets.append(y)  # for the epoch's rank correlation
        print(f"step {step} loss {loss.item():.4f}", flush=True)


if __name__ == "__main__":
    main()
