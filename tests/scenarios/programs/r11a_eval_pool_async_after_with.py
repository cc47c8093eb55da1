"""Training with a background evaluation: after each epoch the validation shards are scored by a
multiprocessing.Pool with `map_async`, so the next epoch can start while they run; the results
are collected with `.get()` before the epoch's summary is printed.

Written from https://github.com/python/cpython/issues/126743 ("multiprocessing async .get()
hangs if the pool is terminated"): the Pool is opened in a `with` block around the
`map_async` call only. Leaving the block calls `terminate()`, which kills the workers while
they score; the AsyncResult is never completed, and the later `.get()` (no timeout) waits for
ever. Nothing is printed after the first epoch's training lines.
"""

import multiprocessing as mp

import torch
from torch import nn

DIM, SHARDS = 32, 4


def score_shard(args):
    state, seed = args
    model = nn.Linear(DIM, 1)
    model.load_state_dict({k: torch.tensor(v) for k, v in state.items()})
    g = torch.Generator().manual_seed(seed)
    total = 0.0
    for _ in range(200):  # a few seconds of scoring per shard
        x = torch.randn(512, DIM, generator=g)
        total += nn.functional.mse_loss(model(x), x.sum(1, keepdim=True)).item()
    return total / 200


def main():
    torch.manual_seed(0)
    model = nn.Linear(DIM, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for epoch in range(3):
        for step in range(50):
            x = torch.randn(64, DIM)
            loss = nn.functional.mse_loss(model(x), x.sum(1, keepdim=True))
            opt.zero_grad()
            loss.backward()
            opt.step()
            if step % 10 == 0:
                print(f"epoch {epoch} step {step} loss {loss.item():.4f}", flush=True)
        state = {k: v.tolist() for k, v in model.state_dict().items()}
        with mp.Pool(2) as pool:  # HANG: with-terminate
            pending = pool.map_async(score_shard, [(state, s) for s in range(SHARDS)])
        # ... the next epoch would start here in the real script; summary first:
        val = sum(pending.get()) / SHARDS  # HANG: get
        print(f"epoch {epoch} val {val:.4f}", flush=True)


if __name__ == "__main__":
    main()
