"""Multi-dataset speech/text training, DDP under torchrun: each rank reads one corpus and the
model picks its input head from the batch itself.

Written from https://github.com/lhotse-speech/lhotse/issues/554 ("How to train with multiple
datasets"): a model with one layer per data source, where each node's batch decides which layer
runs, so in one step rank 0 only touches one head and rank 1 only another. With
find_unused_parameters=False, DDP's reducer never sees gradients for the other head, and the
ranks stop agreeing on which gradient buckets to all-reduce.
"""

import datetime

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset


class Corpus(Dataset):
    """Feature vectors from one source; audio rows have 80 features, text rows 300."""

    def __init__(self, source: str, size: int, seed: int) -> None:
        self.source = source
        g = torch.Generator().manual_seed(seed)
        dim = 80 if source == "audio" else 300
        self.x = torch.randn(size, dim, generator=g)
        self.y = torch.randint(0, 10, (size,), generator=g)

    def __len__(self) -> int:
        return len(self.x)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        return self.x[index], self.y[index]


class MultiSourceClassifier(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.audio_head = nn.Sequential(nn.Linear(80, 256), nn.ReLU())
        self.text_head = nn.Sequential(nn.Linear(300, 256), nn.ReLU())
        self.trunk = nn.Sequential(nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10))

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        head = self.text_head
        if features.shape[-1] == 80:  # HANG: branch
            head = self.audio_head
        return self.trunk(head(features))


def main() -> None:
    dist.init_process_group("gloo", timeout=datetime.timedelta(minutes=30))
    rank = dist.get_rank()
    torch.manual_seed(0)
    source = "audio" if rank == 0 else "text"
    loader = DataLoader(Corpus(source, 512, seed=rank), batch_size=32, shuffle=True)
    model = DDP(MultiSourceClassifier(), find_unused_parameters=False)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    for epoch in range(2):
        for step, (features, labels) in enumerate(loader):
            logits = model(features)  # HANG: forward
            loss = nn.functional.cross_entropy(logits, labels)
            optimizer.zero_grad()
            loss.backward()  # HANG: backward
            optimizer.step()
            print(f"rank {rank} epoch {epoch} step {step} loss {loss.item():.4f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
