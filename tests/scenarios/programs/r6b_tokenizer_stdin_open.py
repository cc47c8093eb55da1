"""Bag-of-words review classifier whose vocabulary comes from an external tokenizer tool.

Written from https://github.com/martianoff/gala/pull/313 ("expose Process.CloseStdin"): a tool
that reads its stdin to EOF before producing any output is driven through a pipe, the parent
writes the input and then waits for the answer without closing the child's stdin. The child
never sees EOF and keeps reading; the parent keeps reading the child's stdout, which never
gets a byte. Both wait on each other for ever (here: `for line in proc.stdout`).
"""

import argparse
import collections
import random
import subprocess
import sys

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

WORDS = ("great movie plot acting boring slow fun awful loved hated music scene cast long "
         "short brilliant dull ending story script").split()


def tokenize_tool() -> None:
    """The 'tokenizer' CLI: reads the whole corpus, then prints one line of ids per document
    (it needs every document first, to build a frequency-sorted vocabulary)."""
    docs = sys.stdin.read().splitlines()
    counts = collections.Counter(w for d in docs for w in d.split())
    vocab = {w: i for i, (w, _) in enumerate(counts.most_common())}
    for d in docs:
        print(" ".join(str(vocab[w]) for w in d.split()))
    sys.stdout.flush()


def make_corpus(n: int, seed: int = 0) -> tuple[list[str], list[int]]:
    rng = random.Random(seed)
    docs, labels = [], []
    for _ in range(n):
        label = rng.random() < 0.5
        pool = WORDS[:10] if label else WORDS[5:]
        docs.append(" ".join(rng.choice(pool) for _ in range(rng.randint(5, 15))))
        labels.append(int(label))
    return docs, labels


class Tokenizer:
    """Thin wrapper around the tokenizer process."""

    def __init__(self):
        self.proc = subprocess.Popen([sys.executable, __file__, "--tokenize"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def encode(self, docs: list[str]) -> list[list[int]]:
        for d in docs:
            self.proc.stdin.write(d + "\n")
        self.proc.stdin.flush()  # HANG: no-eof
        ids = []
        for line in self.proc.stdout:  # HANG: read-ids
            ids.append([int(t) for t in line.split()])
            if len(ids) == len(docs):
                break
        return ids


def bag_of_words(ids: list[list[int]], vocab: int) -> torch.Tensor:
    x = torch.zeros(len(ids), vocab)
    for row, doc in enumerate(ids):
        for t in doc:
            x[row, t] += 1.0
    return x


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tokenize", action="store_true")
    parser.add_argument("--docs", type=int, default=800)
    parser.add_argument("--epochs", type=int, default=5)
    args = parser.parse_args()
    if args.tokenize:
        tokenize_tool()
        return

    docs, labels = make_corpus(args.docs)
    print(f"corpus: {len(docs)} reviews, {sum(len(d) for d in docs)} chars", flush=True)
    tok = Tokenizer()
    print("tokenizing ...", flush=True)
    ids = tok.encode(docs)
    vocab = 1 + max(t for doc in ids for t in doc)
    x, y = bag_of_words(ids, vocab), torch.tensor(labels, dtype=torch.float32)
    loader = DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True)
    model = nn.Sequential(nn.Linear(vocab, 32), nn.ReLU(), nn.Linear(32, 1))
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    for epoch in range(args.epochs):
        total = 0.0
        for xb, yb in loader:
            loss = nn.functional.binary_cross_entropy_with_logits(model(xb).squeeze(1), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item()
        print(f"epoch {epoch}: loss {total / len(loader):.4f}", flush=True)


if __name__ == "__main__":
    main()
