"""Pre-tokenise a crawl of text shards in a multiprocessing.Pool before training a BPE-ish model.

Written from https://github.com/python/cpython/issues/103061 ("multiprocessing.Pool hangs on
certain custom Exceptions"): an exception class whose __init__ takes other arguments than the
ones it passes to Exception.__init__ pickles fine in the worker, but cannot be rebuilt in the
parent. Unpickling happens in the pool's result-handler thread, which dies with a TypeError
("missing 1 required positional argument"); nobody delivers results any more and the caller's
`imap` waits for ever. Here the tokeniser raises ShardDecodeError(shard, offset) on a shard with
a byte that is not UTF-8.
"""

import multiprocessing as mp
import random
import re
import time
from collections import Counter

WORD = re.compile(r"[a-z]+|[0-9]+|[^\sa-z0-9]")


class ShardDecodeError(Exception):
    def __init__(self, shard: int, offset: int) -> None:  # HANG: init
        super().__init__(f"shard {shard}: invalid UTF-8 at byte {offset}")
        self.shard = shard
        self.offset = offset


def make_shard(idx: int) -> bytes:
    rng = random.Random(idx)
    words = ["the", "model", "loss", "token", "gradient", "batch", "2024", "layer", "norm", "."]
    text = " ".join(rng.choice(words) for _ in range(40_000)).encode()
    if idx == 5:  # one shard of the crawl was truncated in the middle of a multi-byte char
        text = text[:90_000] + b"\xc3" + text[90_000:]
    return text


def tokenize_shard(idx: int) -> tuple[int, Counter]:
    raw = make_shard(idx)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ShardDecodeError(idx, exc.start) from None  # HANG: raise
    time.sleep(0.5)  # reading the shard from the object store
    return idx, Counter(WORD.findall(text.lower()))


def main() -> None:
    vocab: Counter = Counter()
    shards = list(range(12))
    print(f"tokenising {len(shards)} shards with 2 workers", flush=True)
    with mp.Pool(processes=2) as pool:
        for done, (idx, counts) in enumerate(pool.imap(tokenize_shard, shards), start=1):
            vocab.update(counts)
            print(f"shard {idx} done ({done}/{len(shards)}), vocab {len(vocab)}", flush=True)
    merges = [w for w, _ in vocab.most_common(8)]
    print(f"top merges: {merges}", flush=True)
    print("training would start here", flush=True)


if __name__ == "__main__":
    main()
