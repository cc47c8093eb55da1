"""Pre-training a small transformer language model with FSDP2 (`fully_shard`) under torchrun,
gloo on CPU. Documents are batched with padding to the longest one in the batch; the model has
learned position embeddings for up to 64 tokens.

Written from https://github.com/mlc-ai/pith-train/pull/31 ("when a rank raises mid-step" in
FSDP training, the peers are left waiting for it in their collectives). Here one record of
the corpus lost its document separator and is 96 tokens long; it lands in rank 1's shard, and
rank 1's forward fails adding the position embeddings, while rank 0 goes on into the next
FSDP all-gather / reduce-scatter of the same step. Rank 1 exits with the error.
"""

import datetime

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.fsdp import fully_shard
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler

MAX_LEN = 64
VOCAB = 256


class Documents(Dataset):
    def __init__(self, size: int = 400) -> None:
        generator = torch.Generator().manual_seed(0)
        lengths = torch.randint(16, MAX_LEN + 1, (size,), generator=generator).tolist()
        lengths[41] = 96  # two documents that were merged when the shard was written
        self.docs = [torch.randint(1, VOCAB, (n,), generator=generator) for n in lengths]

    def __len__(self) -> int:
        return len(self.docs)

    def __getitem__(self, index: int) -> torch.Tensor:
        return self.docs[index]


def pad_batch(docs: list[torch.Tensor]) -> torch.Tensor:
    return nn.utils.rnn.pad_sequence(docs, batch_first=True, padding_value=0)


class Block(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.attn = nn.MultiheadAttention(dim, 4, batch_first=True)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        h = self.norm1(x)
        x = x + self.attn(h, h, h, attn_mask=mask, need_weights=False)[0]
        return x + self.mlp(self.norm2(x))


class TinyLM(nn.Module):
    def __init__(self, dim: int = 64, layers: int = 2) -> None:
        super().__init__()
        self.tokens = nn.Embedding(VOCAB, dim)
        self.positions = nn.Parameter(torch.zeros(1, MAX_LEN, dim))
        self.blocks = nn.ModuleList(Block(dim) for _ in range(layers))
        self.head = nn.Linear(dim, VOCAB)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        length = tokens.size(1)
        x = self.tokens(tokens) + self.positions[:, :length]  # HANG: positions
        mask = torch.triu(torch.full((length, length), float("-inf")), diagonal=1)
        for block in self.blocks:
            x = block(x, mask)
        return self.head(x)


def main() -> None:
    dist.init_process_group("gloo", timeout=datetime.timedelta(minutes=30))
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = TinyLM()
    for block in model.blocks:
        fully_shard(block)
    fully_shard(model)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)

    dataset = Documents()
    sampler = DistributedSampler(dataset, shuffle=False)
    loader = DataLoader(dataset, batch_size=4, sampler=sampler, collate_fn=pad_batch)
    for epoch in range(2):
        sampler.set_epoch(epoch)
        for step, tokens in enumerate(loader):
            logits = model(tokens[:, :-1])  # HANG: step
            loss = nn.functional.cross_entropy(logits.flatten(0, 1), tokens[:, 1:].flatten(),
                                               ignore_index=0)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            if step % 5 == 0:
                print(f"rank {rank} epoch {epoch} step {step} loss {loss.item():.4f}",
                      flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
