"""Train a small MLP, then hand the checkpoint to a verification child before publishing it.

The child (`<script> --scrub CKPT`) is a durability scrubber: it copies the checkpoint to scratch
storage in 64 KiB blocks, `fsync`s every block, reads each copy back and compares checksums, for
a fixed scrub budget of about 40 seconds (plenty of passes for a small checkpoint), then prints
one summary line and exits. The parent prints nothing while it waits (`communicate()`, no
timeout): the job is silent for ~40 s, mostly in fsync and wait4, and then finishes with exit 0.
"""

import argparse
import hashlib
import os
import subprocess
import sys
import tempfile
import time

import torch
from torch import nn

BLOCK = 64 << 10


def scrub(path: str, budget_s: float) -> None:
    with open(path, "rb") as handle:
        data = handle.read()
    want = hashlib.sha256(data).hexdigest()
    scratch = path + ".scrub"
    passes = blocks = 0
    deadline = time.monotonic() + budget_s
    while time.monotonic() < deadline:
        fd = os.open(scratch, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            for off in range(0, len(data), BLOCK):
                os.write(fd, data[off:off + BLOCK])
                os.fsync(fd)
                blocks += 1
        finally:
            os.close(fd)
        with open(scratch, "rb") as handle:
            got = hashlib.sha256(handle.read()).hexdigest()
        if got != want:
            raise SystemExit(f"scrub: checksum mismatch on pass {passes}")
        passes += 1
    os.unlink(scratch)
    print(f"scrub ok: {passes} passes, {blocks} fsynced blocks, sha256 {want[:16]}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--scrub", metavar="CKPT")
    parser.add_argument("--budget", type=float, default=40.0)
    parser.add_argument("--steps", type=int, default=300)
    args = parser.parse_args()
    if args.scrub:
        scrub(args.scrub, args.budget)
        return
    torch.set_num_threads(1)
    torch.manual_seed(0)
    x = torch.randn(4096, 64)
    y = (x[:, :8].sum(1) > 0).long()
    model = nn.Sequential(nn.Linear(64, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                          nn.Linear(512, 2))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    for step in range(args.steps):
        idx = torch.randint(0, len(x), (128,))
        loss = nn.functional.cross_entropy(model(x[idx]), y[idx])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % 100 == 0:
            print(f"step {step} loss {loss.item():.4f}", flush=True)
    with tempfile.TemporaryDirectory(prefix="publish-") as out_dir:
        ckpt = os.path.join(out_dir, "model.pt")
        torch.save({"model": model.state_dict(), "optim": optimizer.state_dict()}, ckpt)
        print(f"checkpoint {os.path.getsize(ckpt) >> 10} KiB; verifying before publish", flush=True)
        cmd = [sys.executable, os.path.abspath(__file__), "--scrub", ckpt,
               "--budget", str(args.budget)]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        out, err = proc.communicate()
        if proc.returncode != 0:
            raise SystemExit(f"scrub failed ({proc.returncode}): {err.strip()}")
        print(out.strip(), flush=True)
    print("published", flush=True)


if __name__ == "__main__":
    main()
