"""Data-parallel training (torchrun, gloo, two CPU ranks) of a model with two heads: a
classification head trained on every sample and a mask head trained only on the samples that
come with a mask annotation.

The data set mixes an annotated pool and an unannotated pool, and interleaves them ("so that
every batch is half annotated"); the DistributedSampler is built with shuffle=False to keep
that order. But DistributedSampler hands rank r the indices r, r+2, r+4, ...: rank 0 gets every
annotated sample and rank 1 none. On rank 1 the mask loss is skipped in every step, the mask
head's parameters never receive a gradient, and DDP (find_unused_parameters=False) never
finishes that iteration's reduction. Rank 1's next forward raises "RuntimeError: Expected to
have finished reduction in the prior iteration before starting a new one. This error indicates
that your module has parameters that were not used in producing loss". Rank 0, which had
launched that reduction and was waiting in its first backward for rank 1 to join it, then fails
too, with gloo's "Connection closed by peer", and the launcher reports rank 1 as the root cause.

Written from https://github.com/open-mmlab/mmdetection/issues/2153 (DDP training stops with
"Expected to have finished reduction in the prior iteration before starting a new one"); the
FAQ entry that came out of it (https://github.com/open-mmlab/mmdetection/pull/4742) names the
cause: "running different branches in your code in DDP mode".
"""

import os

import torch
import torch.distributed as dist
from torch import nn
from torch.nn import functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset, DistributedSampler

FEATURES = 24
CLASSES = 5
MASK_CELLS = 12
PER_POOL = 256


class MixedSupervision(Dataset):
    """Annotated and unannotated samples, interleaved one by one."""

    def __init__(self) -> None:
        gen = torch.Generator().manual_seed(0)
        proj = torch.randn(FEATURES, MASK_CELLS, generator=gen)
        annotated, unannotated = [], []
        for pool, has_mask in ((annotated, True), (unannotated, False)):
            for _ in range(PER_POOL):
                x = torch.randn(FEATURES, generator=gen)
                y = int(x[:CLASSES].argmax())
                mask = (x @ proj > 0).float() if has_mask else torch.zeros(MASK_CELLS)
                pool.append((x, y, mask, has_mask))
        self.samples = [s for pair in zip(annotated, unannotated) for s in pair]

    def __len__(self) -> int:
        return len(self.samples)

    def __getitem__(self, idx: int):
        return self.samples[idx]


class TwoHeadNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.backbone = nn.Sequential(nn.Linear(FEATURES, 64), nn.ReLU(), nn.Linear(64, 64))
        self.cls_head = nn.Linear(64, CLASSES)
        self.mask_head = nn.Sequential(nn.ReLU(), nn.Linear(64, MASK_CELLS))

    def forward(self, x):
        h = self.backbone(x)
        return self.cls_head(h), self.mask_head(h)


def compute_loss(cls_logits, mask_logits, y, mask, has_mask):
    loss = F.cross_entropy(cls_logits, y)
    if has_mask.any():  # HANG: mask-loss-skipped
        loss = loss + F.binary_cross_entropy_with_logits(mask_logits[has_mask], mask[has_mask])
    return loss


def main() -> None:
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    dataset = MixedSupervision()
    # keep the interleaved order: every batch should be half annotated
    sampler = DistributedSampler(dataset, num_replicas=world, rank=rank, shuffle=False)
    loader = DataLoader(dataset, batch_size=16, sampler=sampler)
    model = DDP(TwoHeadNet())
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    for epoch in range(3):
        sampler.set_epoch(epoch)
        for step, (x, y, mask, has_mask) in enumerate(loader):
            cls_logits, mask_logits = model(x)  # HANG: ddp-forward
            loss = compute_loss(cls_logits, mask_logits, y, mask, has_mask)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            if step % 4 == 0:
                print(f"rank {rank} epoch {epoch} step {step} loss {loss.item():.4f}", flush=True)
    if rank == 0:
        torch.save(model.module.state_dict(), os.path.join(os.getcwd(), "two_head.pt"))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
