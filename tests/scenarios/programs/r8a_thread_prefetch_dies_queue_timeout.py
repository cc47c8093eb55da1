"""Click-through-rate model trained from feature shards. A background prefetch thread loads the
shards one after the other, cuts each into whole mini-batches with `.view(-1, BATCH, ...)` and
puts the batches on a bounded queue; the training loop takes them with `queue.get(timeout=...)`
and, as a guard against a stuck reader, raises if no batch arrives in time.

Written from https://github.com/RadarML/red-rover/issues/23 ("Prefetch hangs forever if the
iterator raises an exception": the prefetch thread dies without ever telling the consumer).
Same mechanism, with the consumer's timeout guard: the shard exporter writes full shards of
512 rows except the last one, which holds the remainder (200 rows). The prefetcher's reshape
assumes whole batches, so on the last shard it raises RuntimeError ("shape '[-1, 64, 24]' is
invalid for input of size ...") and the thread dies; Python prints its traceback, but nobody
tells the training loop. The loop drains the batches already queued, then waits, and after
its timeout raises its own RuntimeError ("prefetcher delivered no batch"), which is what ends
the job: the error that kills the process is not the one that caused the failure.
"""

import argparse
import queue
import threading

import torch
from torch import nn

BATCH = 64
FEATURES = 24
SHARD_ROWS = 512
PREFETCH_TIMEOUT_S = 5.0
_DONE = object()


def export_shards(total_rows: int) -> list:
    """The exporter writes full shards of SHARD_ROWS rows and one last partial shard."""
    g = torch.Generator().manual_seed(0)
    w = torch.randn(FEATURES, generator=g)
    shards = []
    for start in range(0, total_rows, SHARD_ROWS):
        rows = min(SHARD_ROWS, total_rows - start)
        x = torch.randn(rows, FEATURES, generator=g)
        y = (torch.sigmoid(x @ w) > torch.rand(rows, generator=g)).float()
        shards.append({"x": x, "y": y})
    return shards


def prefetch(shards: list, out: queue.Queue) -> None:
    for shard in shards:
        xs = shard["x"].view(-1, BATCH, FEATURES)  # HANG: view
        ys = shard["y"].view(-1, BATCH)
        for x, y in zip(xs, ys, strict=True):
            out.put((x, y))
    out.put(_DONE)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=5 * SHARD_ROWS + 200)
    args = parser.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    batches: queue.Queue = queue.Queue(maxsize=8)
    loader = threading.Thread(target=prefetch, args=(export_shards(args.rows), batches),
                              name="shard-prefetch", daemon=True)
    loader.start()

    model = nn.Sequential(nn.Linear(FEATURES, 64), nn.ReLU(), nn.Linear(64, 1))
    optimizer = torch.optim.Adagrad(model.parameters(), lr=0.05)
    step = 0
    while True:
        try:
            item = batches.get(timeout=PREFETCH_TIMEOUT_S)
        except queue.Empty:
            raise RuntimeError(f"prefetcher delivered no batch in {PREFETCH_TIMEOUT_S:.0f} s "
                               f"after step {step}; is the shard reader stuck?") from None
        if item is _DONE:
            break
        x, y = item
        loss = nn.functional.binary_cross_entropy_with_logits(model(x).squeeze(1), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % 8 == 0:
            print(f"step {step} loss {loss.item():.4f}", flush=True)
        step += 1
    print(f"trained {step} steps", flush=True)


if __name__ == "__main__":
    main()
