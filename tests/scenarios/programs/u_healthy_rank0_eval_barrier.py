"""Healthy control: DDP training under torchrun where the main process alone runs a long
validation pass (about 15 s, printing nothing) every 20 steps, through `model.module` so that
no DDP collective is involved, while the other rank waits for it in `dist.barrier()`. Slow, but
every rank goes through the same collectives, and the job ends with exit code 0.

Written from https://discuss.pytorch.org/t/torch-distributed-barrier-hangs-in-ddp/114522 (rank-0
validation followed by a barrier hung while validation ran the DDP-wrapped model; the answer was
to validate through `model.module`): this is the working form of that pattern.
"""

import argparse

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP


def make_model() -> nn.Module:
    return nn.Sequential(nn.Linear(64, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                         nn.Linear(512, 10))


def labels_for(x: torch.Tensor) -> torch.Tensor:
    return x[:, :10].argmax(dim=1)


def validation_batches(samples: int, batch_size: int = 512):
    g = torch.Generator().manual_seed(1234)
    for _ in range(samples // batch_size):
        x = torch.randn(batch_size, 64, generator=g)
        yield x, labels_for(x)


def validate(model: nn.Module, samples: int) -> float:
    model.eval()
    correct = seen = 0
    with torch.no_grad():
        for x, y in validation_batches(samples):
            correct += (model(x).argmax(-1) == y).sum().item()
            seen += len(y)
    model.train()
    return correct / seen


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--val-every", type=int, default=20)
    parser.add_argument("--val-samples", type=int, default=2_000_000)
    args = parser.parse_args()

    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = DDP(make_model())
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    g = torch.Generator().manual_seed(rank)

    for step in range(1, args.steps + 1):
        x = torch.randn(64, 64, generator=g)
        loss = nn.functional.cross_entropy(model(x), labels_for(x))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(f"rank {rank} step {step} loss {loss.item():.4f}", flush=True)

        if step % args.val_every == 0:
            if rank == 0:
                accuracy = validate(model.module, args.val_samples)
                print(f"step {step} val_accuracy {accuracy:.4f}", flush=True)
            dist.barrier()

    if rank == 0:
        torch.save(model.module.state_dict(), "/dev/null")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
