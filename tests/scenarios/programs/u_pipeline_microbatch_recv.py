"""Two-stage pipeline-parallel training written by hand with `dist.send`/`dist.recv` (GPipe:
all micro-batch forwards, then all backwards), one stage per rank, under torchrun.

Written from https://github.com/pytorch/torchtitan/issues/775 (pipeline parallelism "hanging at
the first microbatch"; the maintainers traced it to a batch that does not split into the
configured number of micro-batches and added a check that the batch size is divisible by it,
pytorch/torchtitan#784). Here the first stage splits each batch with `torch.chunk`, which
returns fewer pieces than asked when the batch is short (the last batch of the epoch: 6 samples
in 4 micro-batches gives 3 chunks of 2), while the last stage always expects
`--micro-batches` activations. Rank 1 waits for an activation that rank 0 never sends; rank 0
waits for the gradient of its first micro-batch.
"""

import argparse
import datetime
import math

import torch
import torch.distributed as dist
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

HIDDEN = 64


class FirstStage(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Linear(20, HIDDEN)
        self.block = nn.Sequential(nn.Linear(HIDDEN, HIDDEN), nn.GELU())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.block(self.embed(x))


class LastStage(nn.Module):
    def __init__(self, classes: int = 5) -> None:
        super().__init__()
        self.block = nn.Sequential(nn.Linear(HIDDEN, HIDDEN), nn.GELU())
        self.head = nn.Linear(HIDDEN, classes)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return self.head(self.block(h))


def make_dataset(samples: int) -> TensorDataset:
    g = torch.Generator().manual_seed(0)
    x = torch.randn(samples, 20, generator=g)
    y = (x[:, :5].argmax(dim=1)).long()
    return TensorDataset(x, y)


def run_first_stage(args: argparse.Namespace, loader: DataLoader) -> None:
    model = FirstStage()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    for _epoch in range(args.epochs):
        for _step, (x, y) in enumerate(loader):
            micro_x = torch.chunk(x, args.micro_batches)  # HANG: split
            micro_y = torch.chunk(y, args.micro_batches)
            outputs = []
            for mx, my in zip(micro_x, micro_y, strict=True):
                out = model(mx)
                dist.send(out.detach(), dst=1)
                dist.send(my, dst=1)
                outputs.append(out)
            for out in outputs:
                grad = torch.empty_like(out)
                dist.recv(grad, src=1)
                out.backward(grad)
            optimizer.step()
            optimizer.zero_grad()


def run_last_stage(args: argparse.Namespace, steps_per_epoch: int) -> None:
    model = LastStage()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    micro_size = args.batch_size // args.micro_batches
    for epoch in range(args.epochs):
        for step in range(steps_per_epoch):
            activations, losses = [], []
            for _ in range(args.micro_batches):
                h = torch.empty(micro_size, HIDDEN)
                dist.recv(h, src=0)  # HANG: recv
                target = torch.empty(micro_size, dtype=torch.long)
                dist.recv(target, src=0)
                h.requires_grad_()
                loss = nn.functional.cross_entropy(model(h), target) / args.micro_batches
                activations.append(h)
                losses.append(loss)
            for h, loss in zip(activations, losses, strict=True):
                loss.backward()
                dist.send(h.grad, dst=0)
            optimizer.step()
            optimizer.zero_grad()
            total = sum(loss.item() for loss in losses)
            print(f"epoch {epoch} step {step} loss {total:.4f}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--samples", type=int, default=70)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--micro-batches", type=int, default=4)
    parser.add_argument("--epochs", type=int, default=3)
    args = parser.parse_args()

    dist.init_process_group("gloo", timeout=datetime.timedelta(minutes=30))
    rank = dist.get_rank()
    torch.manual_seed(0)
    dataset = make_dataset(args.samples)
    steps_per_epoch = math.ceil(len(dataset) / args.batch_size)
    if rank == 0:
        loader = DataLoader(dataset, batch_size=args.batch_size, shuffle=True)
        run_first_stage(args, loader)
    else:
        run_last_stage(args, steps_per_epoch)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
