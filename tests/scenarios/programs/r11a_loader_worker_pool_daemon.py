"""Token classification (NER-style) over sentences whose features are built on the fly by the
Dataset, which converts each chunk of examples to features with a multiprocessing.Pool.

Written from https://github.com/ThilinaRajapakse/simpletransformers/issues/1247 ("AssertionError:
daemonic processes are not allowed to have children"): a feature-conversion helper that opens a
`Pool` works when called from the main process, but called from inside a process that is
itself daemonic (here a DataLoader worker, which PyTorch starts with daemon=True) the Pool's
`start()` of its first child fails the assertion; the worker sends the error back and the job
fails at its first batch.
"""

import argparse
import multiprocessing as mp

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

VOCAB, TAGS, SEQ = 500, 9, 24


def to_features(words):
    return [hash(w) % VOCAB for w in words][:SEQ] + [0] * max(0, SEQ - len(words))


class NerChunks(Dataset):
    def __init__(self, n_chunks, chunk):
        self.n_chunks, self.chunk = n_chunks, chunk

    def __len__(self):
        return self.n_chunks

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        sents = [[f"w{int(t)}" for t in torch.randint(0, 2000, (SEQ,), generator=g)]
                 for _ in range(self.chunk)]
        with mp.Pool(2) as pool:  # HANG: nested-pool
            feats = pool.map(to_features, sents)
        x = torch.tensor(feats)
        y = torch.randint(0, TAGS, (self.chunk, SEQ), generator=g)
        return x, y


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--epochs", type=int, default=2)
    args = ap.parse_args()
    # The conversion was fast in the notebook (num_workers=0); moved into loader workers here.
    loader = DataLoader(NerChunks(64, 16), batch_size=None, num_workers=args.workers)  # HANG: daemon-workers
    model = nn.Sequential(nn.Embedding(VOCAB, 64), nn.Linear(64, TAGS))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for epoch in range(args.epochs):
        for step, (x, y) in enumerate(loader):
            loss = nn.functional.cross_entropy(model(x).reshape(-1, TAGS), y.reshape(-1))
            opt.zero_grad()
            loss.backward()
            opt.step()
            if step % 10 == 0:
                print(f"epoch {epoch} step {step} loss {loss.item():.4f}", flush=True)


if __name__ == "__main__":
    main()
