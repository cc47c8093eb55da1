"""Featurize a molecule set in DataLoader workers before training, without progress output.

From https://github.com/yvquanli/GLAM/issues/3 ("Stuck in Training start ...", then "Nevermind,
fixed it! Just had to wait for a bit": the dataset processing was slow, not stuck). The job
first turns raw molecules into graph fingerprints in two DataLoader workers, chunk by chunk,
printing nothing for ~10-15 s while both workers compute; then it trains a small regressor on the
features for a few epochs, printing the loss each step, and exits normally.
"""

import argparse
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

ATOMS = "CNOSPFIB"
FP_BITS = 256


def make_molecule(i):
    g = torch.Generator().manual_seed(i)
    n = int(torch.randint(18, 30, (1,), generator=g))
    atoms = [ATOMS[int(a)] for a in torch.randint(0, len(ATOMS), (n,), generator=g)]
    bonds = [(k, k + 1) for k in range(n - 1)]
    bonds += [tuple(sorted(torch.randint(0, n, (2,), generator=g).tolist())) for _ in range(n // 3)]
    return atoms, [b for b in bonds if b[0] != b[1]]


def fingerprint(atoms, bonds, radius=3, rounds=900):
    """A Morgan-like circular fingerprint, computed in pure Python (slow on purpose, like RDKit
    featurizers called per molecule with extra descriptors)."""
    nbrs = [[] for _ in atoms]
    for a, b in bonds:
        nbrs[a].append(b)
        nbrs[b].append(a)
    bits = [0] * FP_BITS
    for r in range(rounds):
        ids = [hash((sym, r)) & 0xFFFFFFFF for sym in atoms]
        for _ in range(radius):
            ids = [
                hash((ids[i], tuple(sorted(ids[j] for j in nbrs[i])))) & 0xFFFFFFFF
                for i in range(len(atoms))
            ]
            for v in ids:
                bits[v % FP_BITS] += 1
    return bits


class RawChunks(Dataset):
    """One item = one chunk of raw molecules, featurized in a worker."""

    def __init__(self, n_chunks, per_chunk):
        self.n_chunks = n_chunks
        self.per_chunk = per_chunk

    def __len__(self):
        return self.n_chunks

    def __getitem__(self, c):
        feats, targets = [], []
        for i in range(c * self.per_chunk, (c + 1) * self.per_chunk):
            atoms, bonds = make_molecule(i)
            feats.append(fingerprint(atoms, bonds))
            targets.append(len(bonds) / len(atoms) + 0.1 * atoms.count("O"))
        return torch.tensor(feats, dtype=torch.float32), torch.tensor(targets)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--chunks", type=int, default=8)
    parser.add_argument("--per-chunk", type=int, default=40)
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--batch-size", type=int, default=32)
    args = parser.parse_args()

    print(f"processing {args.chunks * args.per_chunk} molecules ...", flush=True)
    t0 = time.time()
    raw = DataLoader(RawChunks(args.chunks, args.per_chunk), batch_size=None, num_workers=2)
    parts = [chunk for chunk in raw]  # quiet: both workers compute
    x = torch.cat([p[0] for p in parts])
    y = torch.cat([p[1] for p in parts])[:, None]
    x = torch.log1p(x)
    print(f"processed {len(x)} molecules in {time.time() - t0:.1f}s", flush=True)

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(FP_BITS, 64), nn.ReLU(), nn.Linear(64, 1))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    step = 0
    for epoch in range(args.epochs):
        perm = torch.randperm(len(x))
        for i in range(0, len(x), args.batch_size):
            idx = perm[i : i + args.batch_size]
            loss = nn.functional.mse_loss(model(x[idx]), y[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            print(f"epoch {epoch} step {step} loss {loss.item():.4f}", flush=True)
            step += 1
            time.sleep(0.05)
    torch.save(model.state_dict(), "/tmp/r13a_healthy_worker_featurize.pt")
    print("training done", flush=True)


if __name__ == "__main__":
    main()
