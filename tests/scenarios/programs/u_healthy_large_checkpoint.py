"""Healthy control: single-process training that keeps a large feature cache next to the model
and checkpoints both every 20 steps with torch.save (about 300 MB). Nothing is printed while
a checkpoint is written, so the log goes quiet for a moment every 20 steps; the script then
carries on, finishes, removes its checkpoint and exits 0.

Written from https://github.com/jcjohnson/torch-rnn/issues/112 ("Stuck at 1000th iteration
and no checkpoint written": the run looked frozen, but it was only validating and writing its
periodic checkpoint, which is slow for a big model or slow storage). A quiet stretch during
a checkpoint write is not a hang.
"""

import argparse
import os
import time

import torch
from torch import nn


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--save-every", type=int, default=20)
    parser.add_argument("--cache-rows", type=int, default=300_000)
    parser.add_argument("--ckpt", default="u_healthy_large_checkpoint.pt")
    args = parser.parse_args()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 256))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    # embeddings of the training set, refreshed batch by batch; ~300 MB of float32
    cache = torch.zeros(args.cache_rows, 256)
    try:
        for step in range(1, args.steps + 1):
            idx = torch.randint(0, args.cache_rows, (256,))
            x = torch.randn(256, 256)
            out = model(x)
            loss = nn.functional.mse_loss(out, x)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            cache[idx] = out.detach()
            print(f"step {step} loss {loss.item():.4f}", flush=True)
            if step % args.save_every == 0:
                started = time.monotonic()
                torch.save({"step": step, "model": model.state_dict(),
                            "optimizer": optimizer.state_dict(), "cache": cache.clone()},
                           args.ckpt)
                size = os.path.getsize(args.ckpt) / 2**20
                print(f"saved {size:.0f} MiB checkpoint in {time.monotonic() - started:.1f}s",
                      flush=True)
    finally:
        if os.path.exists(args.ckpt):
            os.remove(args.ckpt)
    print("done", flush=True)


if __name__ == "__main__":
    main()
