"""Language-model fine-tuning that first pre-tokenises its corpus with a multiprocessing pool,
then trains a small model on the token ids.

Written from https://github.com/huggingface/transfer-learning-conv-ai/pull/24 ("Upgrade
get_dataset.tokenize() to multiprocessing"): tokenising a dialogue corpus on one core was slow, so
the dataset is split over a `multiprocessing.Pool` and mapped through a tokenise function before
training starts. The pool step prints nothing for a while but makes steady progress; the job is
healthy and finishes on its own.
"""

import multiprocessing as mp
import random
import re

import torch
from torch import nn

WORDS = [
    "the", "model", "learns", "to", "answer", "questions", "about", "movies", "books", "music",
    "travel", "and", "food", "while", "keeping", "persona", "consistent", "across", "long",
    "dialogues", "with", "many", "turns",
]
VOCAB_SIZE = 512


def make_corpus(lines: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(20, 60))) for _ in range(lines)]


def tokenize(line: str) -> list[int]:
    ids = []
    for word in re.findall(r"\w+|[^\w\s]", line.lower()):
        pieces = list(word)
        while len(pieces) > 1:
            pairs = [pieces[i] + pieces[i + 1] for i in range(len(pieces) - 1)]
            best = min(range(len(pairs)), key=lambda i: (sum(map(ord, pairs[i])) % 97, i))
            pieces[best:best + 2] = [pairs[best]]
        ids.extend(sum(ord(c) * 31 ** k for k, c in enumerate(p)) % VOCAB_SIZE for p in pieces)
    return ids


def tokenize_chunk(lines: list[str]) -> list[list[int]]:
    return [tokenize(line) for line in lines]


class TinyLM(nn.Module):
    def __init__(self, vocab: int, dim: int = 64) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.rnn = nn.GRU(dim, dim, batch_first=True)
        self.head = nn.Linear(dim, vocab)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        hidden, _ = self.rnn(self.embed(ids))
        return self.head(hidden)


def main() -> None:
    corpus = make_corpus(60_000, seed=0)
    chunks = [corpus[i:i + 1000] for i in range(0, len(corpus), 1000)]
    with mp.Pool(processes=2) as pool:
        tokenized = [ids for chunk in pool.map(tokenize_chunk, chunks) for ids in chunk]
    print(f"tokenized {len(tokenized)} lines", flush=True)
    stream = torch.tensor([t for ids in tokenized[:4000] for t in ids])
    seq_len, batch = 32, 16
    windows = stream[: (len(stream) // (seq_len + 1)) * (seq_len + 1)].view(-1, seq_len + 1)
    torch.manual_seed(0)
    model = TinyLM(VOCAB_SIZE)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    for step in range(20):
        rows = windows[torch.randint(0, len(windows), (batch,))]
        logits = model(rows[:, :-1])
        loss = nn.functional.cross_entropy(logits.reshape(-1, VOCAB_SIZE), rows[:, 1:].reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(f"step {step} loss {loss.item():.4f}", flush=True)
    print("done", flush=True)


if __name__ == "__main__":
    main()
