"""Feature-extraction job that records its run and every feature shard in a SQLite manifest. The
coordinator registers the run, starts two extractor processes, joins them and then marks the
run complete and commits. Extractors register each shard with a "retry until the database is
free" helper, because SQLite reports contention as `database is locked`.

Written from https://github.com/DataBiosphere/toil/pull/2955 (all writes go through a helper
that retries for ever on "database is locked": "If something really does hold a database lock
forever, I would expect this new code to deadlock"). The coordinator's INSERT opens an implicit
transaction (sqlite3's legacy isolation: BEGIN before DML, nothing committed until `commit()`),
so it holds the write lock while it waits in `join()`. Each extractor's INSERT waits out its
busy timeout, gets `database is locked`, sleeps and retries, for ever; the coordinator waits for
extractors that can only finish after its own commit.
"""

import multiprocessing as mp
import os
import random
import sqlite3
import tempfile
import time

SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (run_id TEXT PRIMARY KEY, started REAL, status TEXT);
CREATE TABLE IF NOT EXISTS shards (run_id TEXT, path TEXT, n_rows INTEGER, mean REAL);
"""


def write_with_retry(db_path, sql, args, worker):
    warned = False
    while True:
        conn = sqlite3.connect(db_path, timeout=2.0)
        try:
            with conn:
                conn.execute(sql, args)
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc):
                raise
            if not warned:
                print(f"[extractor {worker}] manifest busy, will keep retrying", flush=True)
                warned = True
            time.sleep(0.5)
        finally:
            conn.close()


def extractor(worker, run_id, db_path, out_dir):
    rng = random.Random(worker)
    for shard in range(3):
        rows = [[rng.gauss(0, 1) for _ in range(32)] for _ in range(500)]
        feats = [sum(r) / len(r) for r in rows]  # per-row mean pooling
        path = os.path.join(out_dir, f"feat-{worker}-{shard}.txt")
        with open(path, "w") as f:
            f.write("\n".join(f"{v:.6f}" for v in feats))
        write_with_retry(db_path, "INSERT INTO shards VALUES (?, ?, ?, ?)",
                         (run_id, path, len(feats), sum(feats) / len(feats)), worker)
        print(f"[extractor {worker}] shard {shard} registered", flush=True)


def main():
    out_dir = tempfile.mkdtemp(prefix="r9b_feats_")
    db_path = os.path.join(out_dir, "manifest.sqlite")
    conn = sqlite3.connect(db_path)
    conn.executescript(SCHEMA)
    run_id = f"run-{int(time.time())}"
    conn.execute("INSERT INTO runs VALUES (?, ?, 'run')", (run_id, time.time()))  # HANG: open-txn
    print(f"registered {run_id}, manifest at {db_path}", flush=True)
    ctx = mp.get_context("spawn")
    workers = [ctx.Process(target=extractor, args=(w, run_id, db_path, out_dir)) for w in range(2)]
    for p in workers:
        p.start()
    print("extractors started, waiting for them", flush=True)
    for p in workers:
        p.join()  # HANG: join-holding-write-lock
    conn.execute("UPDATE runs SET status = 'done' WHERE run_id = ?", (run_id,))
    conn.commit()
    n = conn.execute("SELECT COUNT(*) FROM shards WHERE run_id = ?", (run_id,)).fetchone()[0]
    print(f"{run_id} complete: {n} shards", flush=True)


if __name__ == "__main__":
    main()
