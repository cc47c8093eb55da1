"""Keyword-spotting classifier on log-mel features of one-second voice clips. Each sample is a
dict with the clip's feature matrix (frames x mel bins), its keyword label and its speaker id;
the DataLoader (two workers) uses a hand-written `collate_fn` that stacks the feature matrices
into one batch tensor and gathers labels and speaker ids.

Written from https://github.com/pytorch/pytorch/issues/116558 ("verbose stack trace for default
collate function": a custom collate function's `torch.stack` failed inside DataLoader worker 0
with "stack expects each tensor to be equal size, but got [3, 1, 224, 224] at entry 0 and
[3, 1, 144, 192] at entry 6"). Same mechanism here: the collate function assumes that every
clip has the same number of frames, but one recording in the set was cut short (0.8 s instead
of 1 s), so its feature matrix has fewer frames. The worker collating the batch that contains
it raises RuntimeError from `torch.stack`, and the DataLoader re-raises it in the training loop.
"""

import argparse

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

N_MELS = 40
FRAMES = 101  # 1 s of audio at a 10 ms hop
KEYWORDS = 12


class KeywordClips(Dataset):
    def __init__(self, n_clips: int, short_clip: int) -> None:
        g = torch.Generator().manual_seed(0)
        self.labels = torch.randint(0, KEYWORDS, (n_clips,), generator=g)
        self.speakers = torch.randint(0, 50, (n_clips,), generator=g)
        self.templates = torch.randn(KEYWORDS, 1, N_MELS, generator=g)
        self.frames = [FRAMES] * n_clips
        self.frames[short_clip] = 81  # this recording stopped after 0.8 s

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, i: int) -> dict:
        g = torch.Generator().manual_seed(1000 + i)
        label = int(self.labels[i])
        feats = self.templates[label] + 0.8 * torch.randn(self.frames[i], N_MELS, generator=g)
        return {"feats": feats, "label": label, "speaker": int(self.speakers[i])}


def collate_clips(samples: list) -> dict:
    feats = torch.stack([s["feats"] for s in samples])  # HANG: stack
    labels = torch.tensor([s["label"] for s in samples])
    speakers = torch.tensor([s["speaker"] for s in samples])
    return {"feats": feats, "labels": labels, "speakers": speakers}


class KeywordNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Sequential(nn.Conv1d(N_MELS, 64, 5, padding=2), nn.ReLU(),
                                  nn.Conv1d(64, 64, 5, padding=2), nn.ReLU())
        self.head = nn.Linear(64, KEYWORDS)

    def forward(self, feats: torch.Tensor) -> torch.Tensor:
        h = self.conv(feats.transpose(1, 2))  # (batch, mels, frames)
        return self.head(h.mean(dim=2))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--clips", type=int, default=640)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=32)
    args = parser.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    data = KeywordClips(args.clips, short_clip=233)
    loader = DataLoader(data, batch_size=args.batch_size, shuffle=False, num_workers=2,
                        collate_fn=collate_clips)
    model = KeywordNet()
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    for epoch in range(args.epochs):
        correct = total = 0
        for step, batch in enumerate(loader):
            logits = model(batch["feats"])
            loss = nn.functional.cross_entropy(logits, batch["labels"])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            correct += int((logits.argmax(1) == batch["labels"]).sum())
            total += len(batch["labels"])
            print(f"epoch {epoch} step {step} loss {loss.item():.4f} acc {correct / total:.3f}",
                  flush=True)
    print("training finished", flush=True)


if __name__ == "__main__":
    main()
