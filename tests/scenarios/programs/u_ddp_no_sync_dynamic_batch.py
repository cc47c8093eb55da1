"""Speech-command classifier trained with DDP under torchrun, with dynamic batching (each batch
holds as many utterances as fit in a budget of padded frames) and gradient accumulation that
skips DDP's gradient all-reduce with `model.no_sync()` on all but every `--accum-grad`-th batch.

Written from https://github.com/wenet-e2e/wenet/issues/795 (multi-GPU training stuck in
`loss.backward()` with `batch_type: dynamic` and gradient accumulation; a static batch size
made it go away). With dynamic batching the number of batches depends on the utterance lengths
of each rank's shard: here rank 0 gets 20 batches and rank 1 gets 21, so rank 1 runs one more
synchronising backward (batch 20) than rank 0. Rank 0 leaves the epoch and waits in the
barrier before the checkpoint; rank 1 waits in the gradient all-reduce of that extra backward.
"""

import argparse
import datetime
import io
import random
from contextlib import nullcontext

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset, Sampler

N_MELS = 40
N_COMMANDS = 10


class Utterances(Dataset):
    """This rank's share of the corpus: fbank features of random length and a command label."""

    def __init__(self, lengths: list[int], seed: int) -> None:
        self.lengths = lengths
        self.seed = seed

    def __len__(self) -> int:
        return len(self.lengths)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        g = torch.Generator().manual_seed(self.seed * 100_000 + index)
        label = index % N_COMMANDS
        feats = torch.randn(self.lengths[index], N_MELS, generator=g) + 0.1 * label
        return feats, label


class DynamicBatchSampler(Sampler[list[int]]):
    """Groups utterances of similar length so that a padded batch stays under max_frames."""

    def __init__(self, lengths: list[int], max_frames: int, seed: int = 0) -> None:
        self.lengths = lengths
        self.max_frames = max_frames
        self.seed = seed
        self.epoch = 0

    def _batches(self) -> list[list[int]]:
        batches, current = [], []
        for i in sorted(range(len(self.lengths)), key=self.lengths.__getitem__):
            longest = max([self.lengths[j] for j in current] + [self.lengths[i]])
            if current and longest * (len(current) + 1) > self.max_frames:
                batches.append(current)
                current = []
            current.append(i)
        if current:
            batches.append(current)
        return batches

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __iter__(self):
        batches = self._batches()
        random.Random(self.seed + self.epoch).shuffle(batches)
        return iter(batches)

    def __len__(self) -> int:
        return len(self._batches())


def collate(items: list[tuple[torch.Tensor, int]]):
    lengths = torch.tensor([f.shape[0] for f, _ in items])
    feats = nn.utils.rnn.pad_sequence([f for f, _ in items], batch_first=True)
    labels = torch.tensor([label for _, label in items])
    return feats, lengths, labels


class CommandClassifier(nn.Module):
    def __init__(self, hidden: int = 128) -> None:
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(N_MELS, hidden), nn.ReLU(),
                                     nn.Linear(hidden, hidden), nn.ReLU())
        self.classifier = nn.Linear(hidden, N_COMMANDS)

    def forward(self, feats: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        hidden = self.encoder(feats)
        mask = (torch.arange(feats.shape[1])[None, :] < lengths[:, None]).unsqueeze(-1)
        pooled = (hidden * mask).sum(1) / lengths[:, None]
        return self.classifier(pooled)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--utterances", type=int, default=400)
    parser.add_argument("--max-frames", type=int, default=2400)
    parser.add_argument("--accum-grad", type=int, default=4)
    parser.add_argument("--epochs", type=int, default=5)
    args = parser.parse_args()

    dist.init_process_group("gloo", timeout=datetime.timedelta(minutes=30))
    rank, world_size = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)

    g = torch.Generator().manual_seed(0)
    all_lengths = torch.randint(40, 400, (args.utterances,), generator=g).tolist()
    shard = all_lengths[rank::world_size]
    sampler = DynamicBatchSampler(shard, args.max_frames)  # HANG: batching
    loader = DataLoader(Utterances(shard, seed=rank), batch_sampler=sampler, collate_fn=collate)

    model = DDP(CommandClassifier())
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    criterion = nn.CrossEntropyLoss()

    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        model.train()
        for batch_idx, (feats, lengths, labels) in enumerate(loader):
            # Only synchronise gradients on the batches where the optimizer steps.
            context = model.no_sync if batch_idx % args.accum_grad != 0 else nullcontext
            with context():
                loss = criterion(model(feats, lengths), labels) / args.accum_grad
                loss.backward()  # HANG: backward
            if batch_idx % args.accum_grad == 0:
                nn.utils.clip_grad_norm_(model.parameters(), 5.0)
                optimizer.step()
                optimizer.zero_grad()
                print(f"rank {rank} epoch {epoch} batch {batch_idx} "
                      f"loss {loss.item() * args.accum_grad:.4f}", flush=True)

        dist.barrier()  # HANG: epoch-end
        if rank == 0:
            buffer = io.BytesIO()
            torch.save({"epoch": epoch, "model": model.module.state_dict()}, buffer)
            print(f"epoch {epoch} checkpoint {buffer.tell()} bytes", flush=True)

    dist.destroy_process_group()


if __name__ == "__main__":
    main()
