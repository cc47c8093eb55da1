"""Dataset packing with two shard-writer processes, one per source (wiki dump, web crawl): each
tokenizes its source into shards, meets the other at a multiprocessing.Barrier ("all shards on
disk"), then writes its index from both writers' sizes. The group is restarted on failure.

Written from https://github.com/python/cpython/issues/123899 ("multiprocessing.Barrier does not
return if waiting process is terminated": a process killed while waiting never releases the
condition's `_woken_count`, and `notify_all()` waits for it without any timeout). Writer 1 hits
a corrupt record and dies; the supervisor terminates writer 0, which is waiting at the barrier,
and restarts both, re-using the barrier, which still counts the dead waiter: the first new
writer to arrive "releases" it and blocks for ever in `notify_all()` holding the condition's
lock, the second blocks on that lock, the supervisor waits for them; the 30 s timeout is moot.
"""

import json
import multiprocessing as mp
import os
import random
import tempfile
import time
from multiprocessing.connection import wait

WORDS = ["the", "a", "of", "to", "and", "in", "is", "was", "for", "on", "with", "as", "by", "at"]
VOCAB = {w: i for i, w in enumerate(WORDS)}


def make_source(n_shards, seed, docs_per_shard=60):
    rng = random.Random(seed)
    words = [*WORDS, "model", "data", "token", "shard"]
    return [[" ".join(rng.choice(words) for _ in range(rng.randint(20, 80)))
             for _ in range(docs_per_shard)] for _ in range(n_shards)]


def dump(obj, out_dir, name):
    with open(os.path.join(out_dir, name), "w") as f:
        json.dump(obj, f)


def writer_main(rank, source, out_dir, barrier, skip_bad):
    sizes = {}
    for shard, chunk in enumerate(source):
        time.sleep(0.3)  # fetch the raw shard
        if skip_bad:
            chunk = [d for d in chunk if d is not None]
        ids = [[VOCAB.get(w, len(VOCAB)) for w in d.split()] for d in chunk]  # raises on None
        sizes[f"shard-{rank}-{shard}"] = sum(len(x) for x in ids)
        dump(ids, out_dir, f"shard-{rank}-{shard}.json")
    dump(sizes, out_dir, f"sizes-{rank}.json")
    print(f"writer {rank}: {len(sizes)} shards written, waiting for the other writer", flush=True)
    barrier.wait(timeout=30)
    with open(os.path.join(out_dir, f"sizes-{1 - rank}.json")) as f:
        other_tokens = sum(json.load(f).values())
    dump({"own": sizes, "other_tokens": other_tokens}, out_dir, f"index-{rank}.json")
    print(f"writer {rank}: index written", flush=True)


def run_group(ctx, sources, out_dir, barrier, skip_bad):
    pending = [ctx.Process(target=writer_main, args=(r, sources[r], out_dir, barrier, skip_bad),
                           name=f"writer-{r}") for r in range(2)]
    for p in pending:
        p.start()
    while pending:
        ready = wait([p.sentinel for p in pending])  # until a writer exits
        for p in [p for p in pending if p.sentinel in ready]:
            p.join()
            pending.remove(p)
            if p.exitcode != 0:
                for other in pending:
                    other.terminate()  # HANG: terminate-barrier-waiter
                    other.join()
                return False
    return True


def main():
    ctx = mp.get_context("fork")
    out_dir = tempfile.mkdtemp(prefix="r9b_pack_")
    sources = [make_source(2, seed=0), make_source(5, seed=1)]  # wiki dump, web crawl
    sources[1][4][17] = None  # a record the crawler truncated
    barrier = ctx.Barrier(2)
    print(f"packing 7 shards from 2 sources into {out_dir}", flush=True)
    for attempt in range(3):
        if run_group(ctx, sources, out_dir, barrier, skip_bad=attempt > 0):  # HANG: reuse-barrier
            print(f"packing finished on attempt {attempt}", flush=True)
            return
        print(f"attempt {attempt}: a writer failed, restarting the group with skip_bad", flush=True)
    raise SystemExit("packing failed")


if __name__ == "__main__":
    main()
