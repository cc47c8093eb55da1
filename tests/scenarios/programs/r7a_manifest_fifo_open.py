"""Train a small autoencoder and publish the run directory with a SHA-256 manifest.

The trainer can stream step events to an optional live monitor: at start-up it creates a named
pipe `events.pipe` in the run directory and tries to open its write end with O_NONBLOCK; when no
monitor has the read end open the kernel answers ENXIO and the trainer simply trains without
live events. The FIFO stays in the run directory. At the end, the publish step walks the run
directory and hashes every regular-looking entry with `open(path, "rb")` -- and opening a FIFO
for reading blocks in the kernel until some process opens it for writing, which nothing will.

Written from https://github.com/pypa/scripttest/pull/7 ("Prevent named pipes from blocking
indefinitely": "the script under test left a named pipe in the path, which caused scripttest to
block indefinitely when calculating files_after"), see also
https://github.com/odeke-em/drive/issues/208 ("Reading from a named pipe with no content will
hang infinitely").
"""

import argparse
import errno
import hashlib
import json
import os
import tempfile

import torch
from torch import nn


def open_event_stream(run_dir: str):
    path = os.path.join(run_dir, "events.pipe")
    os.mkfifo(path)  # HANG: mkfifo
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
    except OSError as exc:
        if exc.errno != errno.ENXIO:
            raise
        print("no live monitor attached; events go to events.jsonl only", flush=True)
        return None
    return os.fdopen(fd, "w")


def sha256_of(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:  # HANG: open-fifo
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def publish(run_dir: str) -> None:
    manifest = {}
    for name in sorted(os.listdir(run_dir)):
        path = os.path.join(run_dir, name)
        if os.path.isdir(path):
            continue
        manifest[name] = sha256_of(path)
        print(f"hashed {name}", flush=True)
    with open(os.path.join(run_dir, "MANIFEST.json"), "w") as out:
        json.dump(manifest, out, indent=1)
    print(f"published {len(manifest)} files", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=200)
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    run_dir = tempfile.mkdtemp(prefix="run-")
    events = open_event_stream(run_dir)
    data = torch.randn(2048, 32)
    model = nn.Sequential(nn.Linear(32, 8), nn.Tanh(), nn.Linear(8, 32))
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    with open(os.path.join(run_dir, "events.jsonl"), "w") as log:
        for step in range(args.steps):
            batch = data[torch.randint(0, len(data), (64,))]
            loss = nn.functional.mse_loss(model(batch), batch)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            row = json.dumps({"step": step, "loss": round(loss.item(), 5)})
            log.write(row + "\n")
            if events is not None:
                events.write(row + "\n")
            if step % 50 == 0:
                print(f"step {step} loss {loss.item():.4f}", flush=True)
    torch.save(model.state_dict(), os.path.join(run_dir, "model.pt"))
    torch.save(optimizer.state_dict(), os.path.join(run_dir, "optim.pt"))
    publish(run_dir)


if __name__ == "__main__":
    main()
