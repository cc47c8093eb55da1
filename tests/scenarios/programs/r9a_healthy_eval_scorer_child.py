"""Healthy control: the same machinery as the round-9 hangs, used correctly.

Written from the fix discussed in https://github.com/python/cpython/issues/75893 (a pipe read
to EOF stays open as long as any process holds its write end): the dashboard feeder is started
by the job itself with its streams sent to DEVNULL/a file and stopped at the end, and the
external scorer leaves nothing behind, so `subprocess.run(capture_output=True)` returns when
the scorer exits. Shards are tokenised in a Pool, batches come from a prefetch thread that ends
with a sentinel, checkpoints go to a writer thread that is stopped with a sentinel and joined.
Each evaluation waits ~7 s for the scoring service (silent, no CPU); the job exits 0 in ~30 s.
"""

import json
import os
import queue
import subprocess
import sys
import tempfile
import threading
from multiprocessing import Pool

import torch
from torch import nn

SCORER = "import sys, time; n = sum(1 for _ in open(sys.argv[1])); time.sleep(7); print(n)"


def tokenize(shard: int) -> list[list[int]]:
    g = torch.Generator().manual_seed(shard)
    return torch.randint(0, 256, (128, 24), generator=g).tolist()


def prefetch(shards: list, out: queue.Queue) -> None:
    for rows in shards:
        for i in range(0, len(rows), 32):
            out.put(torch.tensor(rows[i : i + 32]))
    out.put(None)


def ckpt_writer(jobs: queue.Queue, run_dir: str) -> None:
    while (job := jobs.get()) is not None:
        epoch, state = job
        torch.save(state, os.path.join(run_dir, f"epoch{epoch}.pt"))


def main() -> None:
    torch.manual_seed(0)
    torch.set_num_threads(1)
    run_dir = tempfile.mkdtemp(prefix="r9a_healthy_")
    metrics = os.path.join(run_dir, "metrics.jsonl")
    open(metrics, "w").close()
    with open(os.path.join(run_dir, "feed.log"), "w") as feed_log:
        feeder = subprocess.Popen(
            ["tail", "-F", metrics], stdout=feed_log, stderr=subprocess.DEVNULL
        )
    with Pool(2) as pool:
        shards = pool.map(tokenize, range(8))
    print(f"tokenised {len(shards)} shards", flush=True)
    jobs: queue.Queue = queue.Queue()
    writer = threading.Thread(target=ckpt_writer, args=(jobs, run_dir), name="ckpt-writer")
    writer.start()
    model = nn.Sequential(nn.EmbeddingBag(256, 32), nn.Linear(32, 2))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for epoch in range(3):
        batches: queue.Queue = queue.Queue(maxsize=4)
        threading.Thread(target=prefetch, args=(shards, batches), daemon=True).start()
        while (ids := batches.get()) is not None:
            loss = nn.functional.cross_entropy(model(ids), ids[:, 0] % 2)
            opt.zero_grad()
            loss.backward()
            opt.step()
        print(f"epoch {epoch} loss {loss.item():.4f}", flush=True)
        with open(metrics, "a") as f:
            f.write(json.dumps({"epoch": epoch, "loss": loss.item()}) + "\n")
        jobs.put((epoch, {k: v.clone() for k, v in model.state_dict().items()}))
        preds = os.path.join(run_dir, "preds.txt")
        with torch.no_grad(), open(preds, "w") as f:
            f.writelines(f"{p}\n" for p in model(torch.tensor(shards[0])).argmax(1).tolist())
        scored = subprocess.run([sys.executable, "-c", SCORER, preds], capture_output=True,
                                text=True, check=True, timeout=60)
        print(f"epoch {epoch} scored {scored.stdout.strip()} predictions", flush=True)
    jobs.put(None)
    writer.join()
    feeder.terminate()
    feeder.wait()
    print("done", flush=True)


if __name__ == "__main__":
    main()
