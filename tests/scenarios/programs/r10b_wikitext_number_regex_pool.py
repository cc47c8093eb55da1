"""ULMFiT-style language-model pretraining on a wikitext-like dump: a multiprocessing.Pool
normalises and numericalises the articles (numbers become `xnum`, hashed vocabulary), and the
training loop streams the results of `pool.imap` into BPTT batches for a small LSTM.

Written from https://github.com/fastai/fastai/issues/2194 ("Prevent catastrophic backtracking
wikitext utils.py"): the number pattern of the wikitext scripts, `^([0-9]+[,.]?)+$`, backtracks
exponentially on a long run of digits that does not end like a number. Article 41 holds a
flattened infobox row of years with a footnote marker ("19981999...2007[a]", 40 digits): the pool
worker that gets it spins in re.match for hours, and since imap returns results in order, the
training loop waits for article 41 for ever while the other workers sit idle.
"""

import multiprocessing as mp
import random
import re
import zlib

import torch
from torch import nn

VOCAB, BPTT, BATCH = 2048, 32, 8
NUMBER_RE = re.compile(r"^([0-9]+[,.]?)+$")  # HANG: backtracking-regex
WORDS = ("the river rises in the hills and flows north through the valley to the sea where "
         "its delta was settled in the early medieval period by farmers and fishermen").split()


def make_articles(n: int = 160, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    articles = []
    for i in range(n):
        words = []
        for _ in range(rng.randint(120, 200)):
            r = rng.random()
            if r < 0.05:
                words.append(str(rng.randint(1800, 2020)))
            elif r < 0.08:
                words.append(f"{rng.randint(1, 999)},{rng.randint(100, 999)}")
            else:
                words.append(rng.choice(WORDS))
        if i == 41:  # an infobox row that lost its separators in the dump
            words.insert(57, "".join(str(y) for y in range(1998, 2008)) + "[a]")
        articles.append(" ".join(words))
    return articles


def numericalise(article: str) -> list[int]:
    ids = []
    for tok in article.lower().split():
        if NUMBER_RE.match(tok):  # HANG: number-match
            tok = "xnum"
        ids.append(zlib.crc32(tok.encode()) % VOCAB)
    return ids + [0]  # end of article


class LSTMLanguageModel(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.emb = nn.Embedding(VOCAB, 32)
        self.rnn = nn.LSTM(32, 64, batch_first=True)
        self.out = nn.Linear(64, VOCAB)

    def forward(self, x):
        return self.out(self.rnn(self.emb(x))[0])


def main() -> None:
    articles = make_articles()
    torch.manual_seed(0)
    model = LSTMLanguageModel()
    optimizer = torch.optim.Adam(model.parameters(), lr=2e-3)
    buffer, step = [], 0
    with mp.get_context("fork").Pool(3) as pool:
        print(f"numericalising {len(articles)} articles with 3 workers", flush=True)
        results = pool.imap(numericalise, articles, chunksize=1)
        for idx, ids in enumerate(results):
            buffer.extend(ids)
            while len(buffer) > BATCH * BPTT + 1:
                chunk = torch.tensor(buffer[:BATCH * BPTT + 1])
                buffer = buffer[BATCH * BPTT:]
                x, y = chunk[:-1].view(BATCH, BPTT), chunk[1:].view(BATCH, BPTT)
                loss = nn.functional.cross_entropy(model(x).reshape(-1, VOCAB), y.reshape(-1))
                optimizer.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(model.parameters(), 0.25)
                optimizer.step()
                print(f"article {idx} step {step} loss {loss.item():.3f}", flush=True)
                step += 1
    torch.save(model.state_dict(), "/tmp/wikitext_lstm_lm.pt")


if __name__ == "__main__":
    main()
