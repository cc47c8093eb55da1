"""Tokenise the corpus in parallel with one multiprocessing.Process per shard, collect the
token ids from a multiprocessing.Queue, then train a small bag-of-words classifier.

Written from https://github.com/python/cpython/issues/87971 ("multiprocessing.Queue hangs
when process on other side dies"): the reader of a Queue waits in `get()` for an item that the
process on the other side was supposed to put, but that process has died. Here one shard
holds a record with bytes that are not valid UTF-8; that shard's tokeniser process raises
UnicodeDecodeError before it puts its result, prints its traceback and exits. The trainer
waits in `queue.get()` (no timeout) for the missing shard for ever.
"""

import multiprocessing as mp
import zlib

import torch
from torch import nn

VOCAB = 512
WORDS = ["the", "model", "loss", "batch", "token", "layer", "gradient", "data", "train", "eval",
         "good", "bad", "fast", "slow", "hang", "step"]


def make_shard(shard: int, size: int) -> list[bytes]:
    rows = []
    for i in range(size):
        words = [WORDS[(shard * 31 + i * 7 + j * 3) % len(WORDS)] for j in range(12)]
        rows.append(" ".join(words).encode("utf-8"))
    if shard == 3:
        rows[17] = rows[17][:20] + b"\xff\xfe" + rows[17][20:]  # scraped page with a bad byte
    return rows


def tokenize(text: str) -> list[int]:
    return [zlib.crc32(word.encode()) % VOCAB for word in text.lower().split()]


def tokenize_shard(shard: int, rows: list[bytes], out: mp.Queue) -> None:
    ids = []
    for raw in rows:
        ids.append(tokenize(raw.decode("utf-8")))  # HANG: decode
    out.put((shard, ids))


def bag_of_words(rows: list[list[int]]) -> torch.Tensor:
    x = torch.zeros(len(rows), VOCAB)
    for i, ids in enumerate(rows):
        x[i].index_add_(0, torch.tensor(ids), torch.ones(len(ids)))
    return x


def main() -> None:
    num_shards, shard_size = 6, 200
    out: mp.Queue = mp.Queue()
    procs = [mp.Process(target=tokenize_shard, args=(s, make_shard(s, shard_size), out))
             for s in range(num_shards)]
    for p in procs:
        p.start()
    print(f"tokenizing {num_shards} shards", flush=True)

    shards = {}
    for _ in range(num_shards):
        shard, ids = out.get()  # HANG: get
        shards[shard] = ids
        print(f"shard {shard} done ({len(ids)} rows)", flush=True)
    for p in procs:
        p.join()

    rows = [r for s in sorted(shards) for r in shards[s]]
    x = bag_of_words(rows)
    y = torch.tensor([len(r) % 2 for r in rows])
    model = nn.Sequential(nn.Linear(VOCAB, 64), nn.ReLU(), nn.Linear(64, 2))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    for step in range(100):
        idx = torch.randint(0, len(rows), (32,))
        loss = nn.functional.cross_entropy(model(x[idx]), y[idx])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % 10 == 0:
            print(f"step {step} loss {loss.item():.4f}", flush=True)


if __name__ == "__main__":
    main()
