"""Promoter classification on DNA windows read from a FASTA file through an indexed reader
(a small pyfaidx-like class with a lock around seek+read), by two DataLoader workers. Windows
that run past a record's end are skipped: the Dataset catches the error and takes the next one.

Written from https://github.com/mdshw5/pyfaidx/issues/94 ("Potential unreleased [lock] in
Faidx.from_file that can lead to deadlock"): the reader takes its lock, then seeks and checks
bounds *before* the try/finally that releases it. A window past the end raises there with the
lock held; the Dataset's except clause moves on to the next window, whose fetch blocks on the
lock its own worker still holds. That worker never answers, and the training loop waits for its
batch for ever.
"""

import os
import tempfile
import threading

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

RECORD, WIN, N = 4096, 200, 640


class FastaReader:
    def __init__(self, path):
        self.f = open(path, "rb")
        self.lock = threading.Lock()

    def fetch(self, start, end):
        self.lock.acquire()  # HANG: acquire
        self.f.seek(start)
        if end > RECORD:
            raise IndexError(f"window {start}-{end} runs past the record end")  # HANG: raise-held
        try:
            return self.f.read(end - start)
        finally:
            self.lock.release()


class Windows(Dataset):
    def __init__(self, path):
        self.path, self.reader = path, None
        g = torch.Generator().manual_seed(0)
        self.starts = torch.randint(0, RECORD - WIN, (N,), generator=g).tolist()
        self.starts[97] = RECORD - WIN // 2  # an annotation off the record's end

    def __len__(self):
        return N

    def __getitem__(self, i):
        if self.reader is None:
            self.reader = FastaReader(self.path)
        for k in range(i, i + N):
            s = self.starts[k % N]
            try:
                seq = self.reader.fetch(s, s + WIN)
                break
            except IndexError:
                continue
        x = torch.tensor([b"ACGT".find(c) for c in seq]).clamp(min=0)
        return nn.functional.one_hot(x, 4).T.float(), int(seq.count(b"TATA") > 0)


def main():
    path = os.path.join(tempfile.mkdtemp(prefix="r11a_fa_"), "chr.fa")
    g = torch.Generator().manual_seed(1)
    with open(path, "wb") as f:
        f.write(bytes(b"ACGT"[int(i)] for i in torch.randint(0, 4, (RECORD,), generator=g)))
    loader = DataLoader(Windows(path), batch_size=16, num_workers=2)
    model = nn.Sequential(nn.Conv1d(4, 16, 9), nn.ReLU(), nn.AdaptiveMaxPool1d(1), nn.Flatten(),
                          nn.Linear(16, 2))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for step, (x, y) in enumerate(loader):  # HANG: loader
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        print(f"step {step} loss {loss.item():.4f}", flush=True)


if __name__ == "__main__":
    main()
