"""DDP text classifier that skips a batch when it runs out of memory, on one rank only.

From https://github.com/pytorch/pytorch/issues/44353: a DDP training loop catches the
out-of-memory error of an oversized batch, zeroes the gradients and moves on to the next batch.
Here rank 1's shard holds one very long document; its attention scores cannot be allocated, rank
1 skips that step's backward (and with it DDP's gradient all_reduce) while rank 0 does not, so
rank 1 reaches the end-of-epoch barrier one all_reduce short and rank 0 waits in its last
backward.
"""

import datetime
import os

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler

VOCAB = 100
DIM = 32
CLASSES = 4
NUM_DOCS = 64
BATCH_SIZE = 4
LONG_DOC_INDEX = 43  # a scraped web page that was never truncated
LONG_DOC_TOKENS = 300_000


class DocDataset(Dataset):
    def __init__(self, n):
        g = torch.Generator().manual_seed(0)
        self.lengths = torch.randint(16, 64, (n,), generator=g).tolist()
        self.lengths[LONG_DOC_INDEX] = LONG_DOC_TOKENS
        self.labels = torch.randint(0, CLASSES, (n,), generator=g).tolist()

    def __len__(self):
        return len(self.lengths)

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        return torch.randint(1, VOCAB, (self.lengths[i],), generator=g), self.labels[i]


def pad_collate(batch):
    longest = max(len(tokens) for tokens, _ in batch)
    padded = torch.zeros(len(batch), longest, dtype=torch.long)
    for row, (tokens, _) in enumerate(batch):
        padded[row, : len(tokens)] = tokens
    return padded, torch.tensor([label for _, label in batch])


class AttnPoolClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, DIM, padding_idx=0)
        self.query = nn.Linear(DIM, DIM)
        self.key = nn.Linear(DIM, DIM)
        self.head = nn.Linear(DIM, CLASSES)

    def forward(self, tokens):
        h = self.embed(tokens)
        scores = self.query(h) @ self.key(h).transpose(1, 2) / DIM**0.5  # (B, L, L)
        ctx = scores.softmax(-1) @ h
        return self.head(ctx.mean(1))


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(minutes=10))
    rank = dist.get_rank()
    torch.manual_seed(0)

    dataset = DocDataset(NUM_DOCS)
    sampler = DistributedSampler(dataset, shuffle=False)
    loader = DataLoader(dataset, batch_size=BATCH_SIZE, sampler=sampler, collate_fn=pad_collate)

    model = DDP(AttnPoolClassifier())
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)

    for epoch in range(2):
        sampler.set_epoch(epoch)
        for step, (tokens, labels) in enumerate(loader):
            try:
                logits = model(tokens)
                loss = F.cross_entropy(logits, labels)
                loss.backward()  # HANG: backward
            except RuntimeError as err:
                if "out of memory" in str(err) or "can't allocate memory" in str(err):
                    print(f"[rank {rank}] | WARNING: ran out of memory, skipping batch", flush=True)
                    optimizer.zero_grad()
                    continue  # HANG: skip-batch
                raise
            optimizer.step()
            optimizer.zero_grad()
            print(f"[rank {rank}] epoch {epoch} step {step} loss {loss.item():.4f}", flush=True)

        dist.barrier()  # HANG: epoch-barrier
        if rank == 0:
            torch.save(model.module.state_dict(), os.devnull)
            print(f"epoch {epoch} done, checkpoint saved", flush=True)

    dist.destroy_process_group()


if __name__ == "__main__":
    main()
