"""Fine-tune a bag-of-subwords classifier on reviews that an external tokenizer (a stand-in for
a Moses/SentencePiece command-line tool, run as a child process) segments line by line.

Written from https://github.com/ansible/ansible/pull/3991 (Popen fed all of its input with
`stdin.write()` before anyone reads its output): the tool answers each line as it reads it.
The script writes the whole corpus to the tool's stdin first and only then reads stdout. After
64 KiB of answers the tool blocks writing its stdout pipe and stops reading stdin; the script
then blocks writing stdin. Neither side moves again, and nothing is printed.
"""

import subprocess
import sys

import torch
from torch import nn

TOOL = r"""
import sys
for line in sys.stdin:
    sys.stdout.write(" ".join("@@" + w for w in line.split()) + "\n")
    sys.stdout.flush()
"""
WORDS = ["good", "bad", "plot", "acting", "boring", "great", "slow", "fun", "awful", "twist"]


def make_reviews(n):
    g = torch.Generator().manual_seed(0)
    idx = torch.randint(0, len(WORDS), (n, 40), generator=g)
    return [" ".join(WORDS[int(i)] for i in row) for row in idx]


def tokenize(lines):
    proc = subprocess.Popen([sys.executable, "-c", TOOL], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    proc.stdin.write("\n".join(lines) + "\n")  # HANG: write-all
    proc.stdin.close()
    out = proc.stdout.read().splitlines()  # HANG: read-after
    proc.wait()
    return out


def main():
    reviews = make_reviews(20000)
    print(f"tokenizing {len(reviews)} reviews...", flush=True)
    pieces = tokenize(reviews)
    vocab = {w: i for i, w in enumerate(sorted({p for line in pieces for p in line.split()}))}
    x = torch.zeros(len(pieces), len(vocab))
    for r, line in enumerate(pieces):
        for p in line.split():
            x[r, vocab[p]] += 1
    y = (x[:, vocab.get("@@good", 0)] > x[:, vocab.get("@@bad", 0)]).long()
    model = nn.Linear(len(vocab), 2)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    for step in range(100):
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 10 == 0:
            print(f"step {step} loss {loss.item():.4f}", flush=True)


if __name__ == "__main__":
    main()
