"""Language-model pre-training with FSDP2 (`fully_shard`) under torchrun, gloo on CPU, with a
validation pass every few steps.

Written from https://github.com/pytorch/torchtitan/issues/1618 (validation loop hangs with
FSDP): each rank reads its own validation shard, and the shards differ in length. The rank
with the shorter shard leaves the validation loop and waits in the barrier after it; the other
rank's next validation forward() waits in FSDP's parameter all-gather.
"""

import argparse

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.fsdp import fully_shard


class MLPLanguageModel(nn.Module):
    def __init__(self, vocab: int = 512, dim: int = 64, layers: int = 2) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.layers = nn.ModuleList(
            nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, 4 * dim), nn.GELU(),
                          nn.Linear(4 * dim, dim)) for _ in range(layers))
        self.head = nn.Linear(dim, vocab)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        x = self.embed(tokens)
        for layer in self.layers:
            x = x + layer(x)
        return self.head(x)


VALIDATION_DOCS = [3, 1, 2, 2, 1, 1]  # windows of 8x32 tokens in each held-out document


def batches(seed: int, count: int):
    g = torch.Generator().manual_seed(seed)
    for _ in range(count):
        tokens = torch.randint(0, 512, (8, 33), generator=g)
        yield tokens[:, :-1], tokens[:, 1:]


def validation_batches(rank: int, world_size: int):
    for doc, windows in enumerate(VALIDATION_DOCS[rank::world_size]):  # HANG: val-shards
        yield from batches(1000 + doc, windows)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--eval-every", type=int, default=10)
    args = parser.parse_args()
    dist.init_process_group("gloo")
    rank, world_size = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = MLPLanguageModel()
    for layer in model.layers:
        fully_shard(layer)
    fully_shard(model)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
    for step, (inputs, targets) in enumerate(batches(rank, args.steps), start=1):
        loss = nn.functional.cross_entropy(model(inputs).flatten(0, 1), targets.flatten())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(f"rank {rank} step {step} loss {loss.item():.4f}", flush=True)
        if step % args.eval_every == 0:
            model.eval()
            with torch.no_grad():
                for inputs, targets in validation_batches(rank, world_size):
                    logits = model(inputs).flatten(0, 1)
                    val = nn.functional.cross_entropy(logits, targets.flatten())
                    print(f"rank {rank} val loss {val.item():.4f}", flush=True)
            dist.barrier()  # HANG: after-validation
            model.train()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
