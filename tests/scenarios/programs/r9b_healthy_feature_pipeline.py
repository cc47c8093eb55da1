"""Healthy control: a feature pipeline using this round's machinery correctly. Extractor
processes read a multiprocessing.Queue and stop on sentinels, and their results are drained
before join; the run row is committed before other processes write to the SQLite manifest; an
uploader process signals a multiprocessing.Event; a packer subprocess run with capture_output
leaves nothing behind; asyncio futures are set with `call_soon_threadsafe`. The upload (~9 s)
and the packer (~7 s) are silent, idle waits; the job exits 0 after ~25 s.

Written from https://github.com/python/cpython/issues/73983 ("joining processes that use queues":
take everything off a queue before joining the process that put it there).
"""

import asyncio
import multiprocessing as mp
import os
import random
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time


def extractor(tasks, results, db_path):
    while (job := tasks.get()) is not None:
        rng = random.Random(job)
        feats = [sum(rng.gauss(0, 1) for _ in range(32)) / 32 for _ in range(40000)]
        with sqlite3.connect(db_path, timeout=30) as conn:
            conn.execute("INSERT INTO shards VALUES (?, ?)", (job, len(feats)))
        results.put((job, sum(feats) / len(feats)))


def uploader(done, out_dir):
    time.sleep(9.0)  # stand-in for copying the shards to the artifact store
    open(os.path.join(out_dir, "UPLOADED"), "w").close()
    done.set()


async def async_eval(shard_means):
    loop = asyncio.get_running_loop()

    def score(fut, value):
        time.sleep(0.05)  # remote scorer round trip
        loop.call_soon_threadsafe(fut.set_result, value > 0)

    futs = [loop.create_future() for _ in shard_means]
    for fut, value in zip(futs, shard_means, strict=True):
        threading.Thread(target=score, args=(fut, value), daemon=True).start()
    return sum(await asyncio.gather(*futs))


def main():
    out_dir = tempfile.mkdtemp(prefix="r9b_healthy_")
    db_path = os.path.join(out_dir, "manifest.sqlite")
    conn = sqlite3.connect(db_path)
    conn.executescript("CREATE TABLE runs (id TEXT, status TEXT); CREATE TABLE shards (job, n);")
    conn.execute("INSERT INTO runs VALUES ('run-1', 'running')")
    conn.commit()  # release the write lock before any extractor needs it
    ctx = mp.get_context("fork")
    tasks, results = ctx.Queue(), ctx.Queue()
    workers = [ctx.Process(target=extractor, args=(tasks, results, db_path)) for _ in range(2)]
    for p in workers:
        p.start()
    print("extracting 16 shards with 2 workers", flush=True)
    for job in [*range(16), None, None]:  # one stop sentinel per extractor
        tasks.put(job)
    means = dict(results.get() for _ in range(16))  # drain before join
    for p in workers:
        p.join()
    print(f"extracted {len(means)} shards, uploading", flush=True)
    done = ctx.Event()
    up = ctx.Process(target=uploader, args=(done, out_dir))
    up.start()
    if not done.wait(timeout=60):
        raise SystemExit("upload timed out")
    up.join()
    print("upload finished, packing", flush=True)
    packer = "import time, sys; time.sleep(7); print('packed', sys.argv[1])"
    proc = subprocess.run([sys.executable, "-c", packer, out_dir], capture_output=True, text=True,
                          timeout=60)
    print(f"packer rc={proc.returncode}: {proc.stdout.strip()}", flush=True)
    positives = asyncio.run(async_eval(list(means.values())))
    with conn:
        conn.execute("UPDATE runs SET status = 'done'")
    n = conn.execute("SELECT COUNT(*) FROM shards").fetchone()[0]
    print(f"run complete: {n} shards in manifest, {positives} positive", flush=True)


if __name__ == "__main__":
    main()
