"""Train a small classifier on sharded binary records. Before training, the job runs its
shard indexer as a child process (`<script> --index DIR`): the child scans every shard, prints
one `shard,offset,label` line per usable record on stdout and a warning on stderr for each
record it skips. The parent streams the index line by line from `proc.stdout` and keeps
`stderr=PIPE` so that it can show the warnings "if the indexer fails" -- it only reads them
after stdout has reached EOF.

Written from https://github.com/alfredodeza/remoto/issues/62 ("Deadlock scenario ... due to use
of sub-process stdout/stderr pipes and read methods": "a deadlock occurs when the sub-process
fills the OS stderr pipe buffer and is blocked while attempting to continue writing to stderr.
In that case, stdout never reaches EOF and _remote_check is blocked trying to read from
stdout"); the same bug was fixed in https://github.com/facebookincubator/submitit/pull/1609.
This data set has many short records, so the skip warnings pass 64 KiB (the Linux pipe
buffer) long before the index is complete: the child blocks in write() on stderr, the parent
blocks in read() on stdout, and neither ever moves again.
"""

import argparse
import os
import struct
import subprocess
import sys
import tempfile

import torch
from torch import nn

DIM = 16
RECORD = struct.Struct(f"<i{DIM}f")  # label, features


def write_shards(root: str, shards: int, per_shard: int) -> None:
    g = torch.Generator().manual_seed(0)
    for s in range(shards):
        feats = torch.randn(per_shard, DIM, generator=g)
        labels = (feats[:, :4].sum(1) > 0).int()
        # every third record is a "short" record of the old format the indexer skips
        labels[::3] = -1
        with open(os.path.join(root, f"shard-{s:03d}.bin"), "wb") as out:
            for lab, row in zip(labels.tolist(), feats.tolist(), strict=True):
                out.write(RECORD.pack(lab, *row))


def index_shards(root: str) -> None:
    """Child side: scan the shards and print the index."""
    for name in sorted(os.listdir(root)):
        with open(os.path.join(root, name), "rb") as handle:
            data = handle.read()
        for off in range(0, len(data), RECORD.size):
            label = struct.unpack_from("<i", data, off)[0]
            if label < 0:
                sys.stderr.write(  # HANG: child-stderr-write
                    f"indexer: warning: {name}@{off}: record uses the v1 layout "
                    f"(label field -1), skipping it; re-export this shard to keep it\n")
                continue
            sys.stdout.write(f"{name},{off},{label}\n")
    sys.stdout.flush()


def build_index(root: str) -> list:
    cmd = [sys.executable, os.path.abspath(__file__), "--index", root]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,  # HANG: stderr-pipe
                            text=True)
    entries = []
    for line in proc.stdout:  # HANG: read-stdout
        name, off, label = line.rstrip("\n").split(",")
        entries.append((name, int(off), int(label)))
    warnings = proc.stderr.read()
    if proc.wait() != 0:
        raise RuntimeError(f"indexer failed:\n{warnings}")
    print(f"index: {len(entries)} records, {warnings.count(chr(10))} skipped", flush=True)
    return entries


def load(root: str, entries: list) -> tuple:
    cache, xs, ys = {}, [], []
    for name, off, label in entries:
        if name not in cache:
            with open(os.path.join(root, name), "rb") as handle:
                cache[name] = handle.read()
        rec = RECORD.unpack_from(cache[name], off)
        xs.append(rec[1:])
        ys.append(label)
    return torch.tensor(xs), torch.tensor(ys)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--index", metavar="DIR")
    parser.add_argument("--shards", type=int, default=12)
    parser.add_argument("--per-shard", type=int, default=600)
    parser.add_argument("--epochs", type=int, default=3)
    args = parser.parse_args()
    if args.index:
        index_shards(args.index)
        return
    torch.set_num_threads(1)
    torch.manual_seed(0)
    with tempfile.TemporaryDirectory(prefix="shards-") as root:
        write_shards(root, args.shards, args.per_shard)
        print(f"wrote {args.shards} shards to {root}", flush=True)
        x, y = load(root, build_index(root))
    model = nn.Sequential(nn.Linear(DIM, 32), nn.ReLU(), nn.Linear(32, 2))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    for epoch in range(args.epochs):
        perm = torch.randperm(len(x))
        for i in range(0, len(x), 128):
            idx = perm[i:i + 128]
            loss = nn.functional.cross_entropy(model(x[idx]), y[idx])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        print(f"epoch {epoch} loss {loss.item():.4f}", flush=True)


if __name__ == "__main__":
    main()
