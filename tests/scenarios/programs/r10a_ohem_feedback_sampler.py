"""Defect classifier trained with online hard-example mining: after a uniform warm-up epoch, a
batch sampler builds every batch from the hardest samples by their latest loss plus a random
half, and the training loop writes each batch's per-sample losses back to the sampler.

Written from https://github.com/pytorch/pytorch/issues/7359 ("Dynamic Samplers": loss-based
sampling, where the maintainers point out that the sampler stays in the main process but the
DataLoader asks it for batch indices ahead of time). To use fresh losses, the sampler waits for
the trainer's report of the previous batch before it picks the next one. With num_workers=2 the
DataLoader pre-fetches prefetch_factor * num_workers batches as soon as the epoch's iterator is
created, so the sampler waits, inside `iter(loader)`, for a report the trainer can only send
after it got a batch: the main thread waits on itself and the epoch never starts.
"""

import queue

import torch
from torch import nn
from torch.utils.data import DataLoader, Sampler, TensorDataset

SAMPLES, FEATURES, CLASSES, BATCH = 4096, 32, 4, 64


class HardExampleBatchSampler(Sampler[list[int]]):
    def __init__(self, losses: torch.Tensor, batch_size: int, steps: int) -> None:
        self.losses, self.batch_size, self.steps = losses, batch_size, steps
        self.reports: queue.Queue = queue.Queue()

    def __len__(self) -> int:
        return self.steps

    def __iter__(self):
        for step in range(self.steps):
            if step > 0:
                self.reports.get()  # HANG: feedback-wait
            hard = torch.topk(self.losses, self.batch_size // 2).indices
            rest = torch.randint(len(self.losses), (self.batch_size - len(hard),))
            yield torch.cat([hard, rest]).tolist()

    def report(self, indices: torch.Tensor, losses: torch.Tensor) -> None:
        self.losses[indices] = losses
        self.reports.put(len(indices))


def make_data() -> TensorDataset:
    g = torch.Generator().manual_seed(0)
    x = torch.randn(SAMPLES, FEATURES, generator=g)
    y = (x[:, :CLASSES] + 0.5 * torch.randn(SAMPLES, CLASSES, generator=g)).argmax(1)
    return TensorDataset(x, y, torch.arange(SAMPLES))


def main() -> None:
    torch.manual_seed(0)
    torch.set_num_threads(1)
    data = make_data()
    model = nn.Sequential(nn.Linear(FEATURES, 128), nn.ReLU(), nn.Linear(128, CLASSES))
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    losses = torch.full((SAMPLES,), 10.0)  # unseen samples count as hard
    sampler = HardExampleBatchSampler(losses, BATCH, steps=SAMPLES // BATCH)
    warmup = DataLoader(data, batch_size=BATCH, shuffle=True, num_workers=2)
    mined = DataLoader(data, batch_sampler=sampler, num_workers=2)  # HANG: prefetch
    for epoch in range(4):
        loader = warmup if epoch == 0 else mined
        if epoch == 1:
            print("epoch 1: switching to hard-example mining", flush=True)
        for step, (x, y, idx) in enumerate(loader):
            per_sample = nn.functional.cross_entropy(model(x), y, reduction="none")
            loss = per_sample.mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            if epoch == 0:
                losses[idx] = per_sample.detach()
            else:
                sampler.report(idx, per_sample.detach())
            if step % 4 == 0:
                print(f"epoch {epoch} step {step} loss {loss.item():.4f}", flush=True)
    torch.save(model.state_dict(), "/tmp/ohem_classifier.pt")
    print("done", flush=True)


if __name__ == "__main__":
    main()
