"""Token classifier fed by a prefetch process through a multiprocessing.Queue.

Written from https://github.com/python/cpython/issues/84376 ("multiprocessing.Queue.put can
fail silently due to pickle errors"): put() returns at once and the object is pickled later by
the queue's feeder thread; when that fails, the feeder prints a traceback and drops the item,
and the caller never learns of it. The prefetcher streams one epoch at a time, when the trainer
asks for it, and the trainer takes exactly `len(dataset) // BATCH` batches per epoch. Shard 4
comes from the annotated crawl, and the prefetcher attaches its entity spans as a generator
expression, which cannot be pickled: its batches are dropped, the trainer waits in get() for
batches that will never arrive, and the prefetcher waits for the next epoch request.
"""

import multiprocessing as mp
import random

import torch
from torch import nn

VOCAB, SEQ, BATCH, SHARDS, PER_SHARD = 512, 32, 16, 6, 64


def read_records(shard: int, epoch: int):
    rng = random.Random(shard)
    records = []
    for _ in range(PER_SHARD):
        ids = [rng.randrange(VOCAB) for _ in range(SEQ)]
        rec = {"ids": ids, "label": int(sum(ids) % 2)}
        if shard == 4:  # this shard comes from the annotated crawl
            rec["spans"] = [(i, i + 2) for i in range(0, SEQ, 8)]
        records.append(rec)
    random.Random(epoch * 1000 + shard).shuffle(records)
    yield from records


def prefetch(requests: mp.Queue, out: mp.Queue) -> None:
    while (epoch := requests.get()) is not None:
        batch = []
        for shard in range(SHARDS):
            for rec in read_records(shard, epoch):
                batch.append(rec)
                if len(batch) < BATCH:
                    continue
                item = {"ids": [r["ids"] for r in batch], "labels": [r["label"] for r in batch]}
                if "spans" in batch[0]:
                    item["spans"] = (r["spans"] for r in batch)  # HANG: unpicklable
                out.put(item)  # HANG: put
                batch = []


def main() -> None:
    torch.manual_seed(0)
    torch.set_num_threads(1)
    requests, batches = mp.Queue(), mp.Queue(maxsize=8)
    worker = mp.Process(target=prefetch, args=(requests, batches), daemon=True, name="prefetch")
    worker.start()
    model = nn.Sequential(nn.EmbeddingBag(VOCAB, 64), nn.Linear(64, 2))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    steps_per_epoch = SHARDS * PER_SHARD // BATCH
    for epoch in range(3):
        requests.put(epoch)
        for step in range(1, steps_per_epoch + 1):
            item = batches.get()
            ids, labels = torch.tensor(item["ids"]), torch.tensor(item["labels"])
            loss = nn.functional.cross_entropy(model(ids), labels)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if step % 4 == 0:
                print(f"epoch {epoch} step {step} loss {loss.item():.4f}", flush=True)
    requests.put(None)
    worker.join()
    print("done", flush=True)


if __name__ == "__main__":
    main()
