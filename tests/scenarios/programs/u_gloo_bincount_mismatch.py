"""Classifier training with DDP under torchrun and a per-class accuracy metric summed over
the ranks at the end of each epoch.

Written from https://github.com/NVIDIA/nccl/issues/1394 (all_reduce with tensors of different
shapes on different ranks: NCCL hangs or returns garbage, gloo aborts with "op.preamble.length
<= op.nbytes"): the per-class counts come from `torch.bincount` without `minlength`, so each
rank's tensor is as long as the largest label in its own validation shard. The shards are
split by position in a label-sorted file, and the lengths differ: gloo aborts the job.
"""

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

CLASSES = 10


def per_class_accuracy(model: nn.Module, images: torch.Tensor, labels: torch.Tensor):
    with torch.no_grad():
        hits = model(images).argmax(1) == labels
    correct = torch.bincount(labels[hits]).float()
    support = torch.bincount(labels).float()  # HANG: bincount
    counts = torch.stack([correct.resize_(support.shape), support])
    dist.all_reduce(counts)  # HANG: all-reduce
    return counts[0] / counts[1].clamp(min=1)


def main() -> None:
    dist.init_process_group("gloo")
    rank, world_size = dist.get_rank(), dist.get_world_size()
    g = torch.Generator().manual_seed(0)
    labels = torch.randint(0, CLASSES, (1024,), generator=g)
    train = TensorDataset(torch.randn(1024, 20, generator=g), labels)
    val_labels = torch.arange(CLASSES).repeat_interleave(20)  # the file is sorted by label
    val_images = torch.randn(len(val_labels), 20, generator=g) + val_labels[:, None] * 0.1
    shard = slice(rank * len(val_labels) // world_size, (rank + 1) * len(val_labels) // world_size)
    loader = DataLoader(train, batch_size=64, sampler=DistributedSampler(train))
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, CLASSES)))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    for epoch in range(3):
        for x, y in loader:
            loss = nn.functional.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        print(f"rank {rank} epoch {epoch} loss {loss.item():.4f}", flush=True)
        accuracy = per_class_accuracy(model.module, val_images[shard], val_labels[shard])
        print(f"epoch {epoch} per-class accuracy {accuracy.tolist()}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
