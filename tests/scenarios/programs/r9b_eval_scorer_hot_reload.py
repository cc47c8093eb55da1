"""Checkpoint evaluation server: two scorer processes take requests from a shared
multiprocessing.Queue and answer on a results queue; when a newer checkpoint appears, the server
"hot-reloads" by terminating the old scorers and starting new ones on the same request queue.

Written from https://github.com/ShannonAI/service-streamer/issues/94 (after one worker is killed,
the other never gets anything from the `mp.Queue` again: the killed worker was holding the
queue's `_rlock`, which is never released). An idle scorer sits in `tasks.get()`, which on POSIX
holds the queue's read lock (a process-shared semaphore) while it waits in `_recv_bytes()`.
`terminate()` kills it there, the lock stays taken by a dead process, and the new scorers block
for ever acquiring it. The server waits in `results.get()` for answers that will never come.
"""

import math
import multiprocessing as mp
import random
import time

FEATURES = 64
BATCH = 200


def scorer_main(worker_id, step, tasks, results):
    rng = random.Random(step)  # stand-in for loading the checkpoint's weights
    weights = [rng.uniform(-1.0, 1.0) for _ in range(FEATURES)]
    while (job := tasks.get()) is not None:
        req_id, feats, label = job
        logit = sum(w * x for w, x in zip(weights, feats, strict=True))
        prob = 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, logit))))
        results.put((req_id, worker_id, step, prob, label))


class EvalServer:
    def __init__(self, ctx, n_scorers=2):
        self.ctx, self.n_scorers = ctx, n_scorers
        self.tasks, self.results = ctx.Queue(), ctx.Queue()
        self.scorers = []

    def start(self, step):
        self.scorers = [
            self.ctx.Process(target=scorer_main, args=(i, step, self.tasks, self.results),
                             name=f"scorer-{i}", daemon=True)
            for i in range(self.n_scorers)
        ]
        for p in self.scorers:
            p.start()

    def reload(self, step):
        # hot swap: the old scorers are idle between batches, so just replace them
        for p in self.scorers:
            p.terminate()  # HANG: terminate-idle-scorer
            p.join()
        self.start(step)

    def evaluate(self, requests):
        for req in requests:
            self.tasks.put(req)
        correct = 0
        for _ in range(len(requests)):
            _, _, _, prob, label = self.results.get()
            correct += int((prob > 0.5) == bool(label))
        return correct / len(requests)


def make_requests(seed):
    rng = random.Random(seed)
    reqs = []
    for i in range(BATCH):
        feats = [rng.gauss(0.0, 1.0) for _ in range(FEATURES)]
        reqs.append((f"{seed}-{i}", feats, int(sum(feats[:8]) > 0)))
    return reqs


def main():
    server = EvalServer(mp.get_context("fork"))
    server.start(step=1000)
    print("eval server up: 2 scorers on checkpoint step 1000", flush=True)
    for round_ in range(3):
        acc = server.evaluate(make_requests(round_))
        print(f"[step 1000] eval round {round_}: acc={acc:.3f} on {BATCH} requests", flush=True)
    time.sleep(0.5)  # checkpoint watcher poll interval
    print("new checkpoint step 2000 found, reloading scorers", flush=True)
    server.reload(step=2000)
    for round_ in range(3, 6):
        acc = server.evaluate(make_requests(round_))
        print(f"[step 2000] eval round {round_}: acc={acc:.3f} on {BATCH} requests", flush=True)
    print("done", flush=True)


if __name__ == "__main__":
    main()
