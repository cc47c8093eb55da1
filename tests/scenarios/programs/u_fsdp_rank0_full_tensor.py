"""Small language-model training with FSDP2 (`fully_shard`) under torchrun, gloo on CPU.

Written from https://github.com/pytorch/pytorch/issues/148756 (gathering the model on rank 0
only): to write a consolidated checkpoint, rank 0 calls `DTensor.full_tensor()` on every
parameter inside `if rank == 0:`. `full_tensor()` is an all-gather over all ranks; rank 1
has gone on to the barrier after the save and waits there.
"""

import argparse
import io

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.fsdp import fully_shard
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler


class TokenWindows(Dataset):
    def __init__(self, vocab: int = 256, length: int = 16, size: int = 2048) -> None:
        self.tokens = torch.randint(0, vocab, (size, length + 1),
                                    generator=torch.Generator().manual_seed(0))

    def __len__(self) -> int:
        return len(self.tokens)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        return self.tokens[index, :-1], self.tokens[index, 1:]


class TinyLM(nn.Module):
    def __init__(self, vocab: int = 256, dim: int = 64) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.blocks = nn.ModuleList(nn.Sequential(nn.Linear(dim, dim), nn.GELU()) for _ in range(2))
        self.head = nn.Linear(dim, vocab)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        x = self.embed(tokens)
        for block in self.blocks:
            x = x + block(x)
        return self.head(x)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--save-every", type=int, default=20)
    args = parser.parse_args()
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = TinyLM()
    for block in model.blocks:
        fully_shard(block)
    fully_shard(model)
    dataset = TokenWindows()
    loader = DataLoader(dataset, batch_size=16, sampler=DistributedSampler(dataset))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    for step, (inputs, targets) in enumerate(loader, start=1):
        loss = nn.functional.cross_entropy(model(inputs).flatten(0, 1), targets.flatten())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % 5 == 0:
            print(f"rank {rank} step {step} loss {loss.item():.4f}", flush=True)
        if step % args.save_every == 0:
            if rank == 0:
                state = model.state_dict()
                full = {name: p.full_tensor() for name, p in state.items()}  # HANG: gather
                torch.save(full, io.BytesIO())
            dist.barrier()  # wait until the checkpoint is written
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
