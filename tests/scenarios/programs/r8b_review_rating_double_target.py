"""Train a character-level CNN that predicts a review's 0-10 star rating from its text.

The reviews come from a scraped CSV in which the rating column is written as "7.0", "10.0", and
so on; the loader parses it with float() and keeps the labels in a NumPy float64 array, so the
default collate turns every batch of labels into a DoubleTensor. The labels travel unchanged
through the training step into a small loss helper that applies class weights (the ratings are
imbalanced) with `F.cross_entropy`, which wants class indices as int64 and raises
`RuntimeError: expected target dtype to be Long or Byte, but got Double` on the first step.

Written from https://github.com/ahmedbesbes/character-based-cnn/issues/5 ("RuntimeError:
expected scalar type Long but found Double", raised at `loss = criterion(predictions, labels)`
when training the character CNN on the reporter's own scraped reviews rated 0-10).
"""

import csv
import os
import tempfile

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F
from torch.utils.data import DataLoader, Dataset

ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789 .,!?'"
MAX_LEN = 96
CLASSES = 11  # ratings 0..10

WORDS_BY_MOOD = [
    ["awful", "broken", "refund", "never", "worst", "rude"],
    ["okay", "fine", "average", "decent", "slow", "meh"],
    ["great", "love", "perfect", "amazing", "fast", "friendly"],
]


def write_scraped_reviews(path: str, count: int = 1200) -> None:
    rng = np.random.default_rng(0)
    with open(path, "w", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(["review_id", "text", "rating"])
        for i in range(count):
            rating = int(rng.integers(0, CLASSES))
            words = WORDS_BY_MOOD[min(rating // 4, 2)]
            text = " ".join(rng.choice(words, size=int(rng.integers(4, 14))))
            writer.writerow([i, text, f"{rating:.1f}"])  # the scraper writes "7.0"


class ReviewDataset(Dataset):
    def __init__(self, csv_path: str) -> None:
        texts, ratings = [], []
        with open(csv_path, newline="") as handle:
            for row in csv.DictReader(handle):
                texts.append(row["text"].lower())
                ratings.append(float(row["rating"]))  # HANG: float-labels
        self.texts = texts
        self.labels = np.array(ratings)
        self.index = {ch: i + 1 for i, ch in enumerate(ALPHABET)}

    def __len__(self) -> int:
        return len(self.texts)

    def encode(self, text: str) -> torch.Tensor:
        ids = [self.index.get(ch, 0) for ch in text[:MAX_LEN]]
        return torch.tensor(ids + [0] * (MAX_LEN - len(ids)), dtype=torch.long)

    def __getitem__(self, idx: int):
        return self.encode(self.texts[idx]), self.labels[idx]


class CharCNN(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(len(ALPHABET) + 1, 16, padding_idx=0)
        self.conv = nn.Sequential(
            nn.Conv1d(16, 32, kernel_size=5, padding=2), nn.ReLU(), nn.MaxPool1d(3),
            nn.Conv1d(32, 32, kernel_size=3, padding=1), nn.ReLU(), nn.AdaptiveMaxPool1d(1),
        )
        self.head = nn.Linear(32, CLASSES)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        h = self.conv(self.embed(ids).transpose(1, 2)).squeeze(-1)
        return self.head(h)


def class_weights(labels: np.ndarray) -> torch.Tensor:
    counts = np.bincount(labels.astype(int), minlength=CLASSES).astype(np.float32)
    return torch.from_numpy(counts.sum() / (CLASSES * np.maximum(counts, 1.0)))


def compute_loss(logits: torch.Tensor, labels: torch.Tensor, weights: torch.Tensor):
    return F.cross_entropy(logits, labels, weight=weights, label_smoothing=0.05)  # HANG: loss-call


def train_step(model, optimizer, batch, weights) -> float:
    ids, labels = batch
    loss = compute_loss(model(ids), labels, weights)
    optimizer.zero_grad()
    loss.backward()
    nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    return loss.item()


def train_epoch(model, optimizer, loader, weights, epoch: int) -> None:
    for step, batch in enumerate(loader):
        loss = train_step(model, optimizer, batch, weights)
        if step % 10 == 0:
            print(f"epoch {epoch} step {step} loss {loss:.4f}", flush=True)


def main() -> None:
    torch.manual_seed(0)
    torch.set_num_threads(1)
    csv_path = os.path.join(tempfile.mkdtemp(prefix="reviews-"), "reviews.csv")
    write_scraped_reviews(csv_path)
    dataset = ReviewDataset(csv_path)
    print(f"{len(dataset)} reviews, label dtype {dataset.labels.dtype}", flush=True)
    loader = DataLoader(dataset, batch_size=32, shuffle=True)
    model = CharCNN()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    weights = class_weights(dataset.labels)
    for epoch in range(4):
        train_epoch(model, optimizer, loader, weights, epoch)


if __name__ == "__main__":
    main()
