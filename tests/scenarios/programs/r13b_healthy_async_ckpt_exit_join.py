"""Healthy: the last checkpoint is written in the background and finishes during interpreter exit.

Written from https://github.com/ByteDance-Seed/VeOmni/pull/1162 (the final async save's future
was never awaited; "ThreadPoolExecutor's atexit join still let a healthy write finish", in an
interpreter-shutdown join that shows nothing in the log). Here the job trains briefly, then
submits its final export (a low-rank factorisation of every layer by subspace iteration,
then torch.save) to a ThreadPoolExecutor and returns from main without waiting. The
executor's worker computes silently for about 10-15 s while the main thread sits in the
interpreter's shutdown join; then it writes the file, prints one line and the job exits 0.
"""

import os
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

import torch
import torch.nn as nn

WIDTH = 1024
DEPTH = 8
RANK = 256
MAX_ITERS = 100
TOL = 1e-6
STEPS = 25

saver = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ckpt")


def low_rank_factors(w, rank):
    g = torch.Generator().manual_seed(0)
    q, _ = torch.linalg.qr(torch.randn(w.shape[1], rank, generator=g))
    prev = None
    for _ in range(MAX_ITERS):
        q, r = torch.linalg.qr(w.T @ (w @ q))
        sv = r.diagonal().abs()
        if prev is not None and ((sv - prev).abs().max() / sv.max()) < TOL:
            break
        prev = sv
    return w @ q, q.T


def export_low_rank(state, path):
    t0 = time.time()
    out = {}
    for name, p in state.items():
        if p.dim() == 2 and min(p.shape) > RANK:
            a, b = low_rank_factors(p, RANK)
            out[name + ".A"], out[name + ".B"] = a.bfloat16(), b.bfloat16()
        else:
            out[name] = p
    torch.save(out, path)
    print(f"[ckpt] low-rank export written to {path} in {time.time() - t0:.1f}s", flush=True)


def main():
    torch.manual_seed(0)
    layers = []
    for _ in range(DEPTH):
        layers += [nn.Linear(WIDTH, WIDTH), nn.GELU()]
    model = nn.Sequential(nn.Linear(32, WIDTH), *layers, nn.Linear(WIDTH, 1))
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    for step in range(1, STEPS + 1):
        x = torch.randn(32, 32)
        loss = nn.functional.mse_loss(model(x), x.mean(dim=1, keepdim=True))
        opt.zero_grad()
        loss.backward()
        opt.step()
        print(f"step {step} loss {loss.item():.4f}", flush=True)

    out = os.path.join(tempfile.mkdtemp(prefix="export-"), "final_lowrank.pt")
    state = {k: v.detach().clone() for k, v in model.state_dict().items()}
    saver.submit(export_low_rank, state, out)  # final save: not awaited, joined at exit
    print("training done; final export running in the background", flush=True)


if __name__ == "__main__":
    main()
