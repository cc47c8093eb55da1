"""Language-model pretraining whose next shards are tokenized by a forkserver process pool.

Written from https://github.com/karpathy/nano-llama31/pull/5 (tiny_stories.py: `encode` was
created under `if __name__ == "__main__":`, so the pool's workers, started without fork, raised
`NameError: name 'encode' is not defined` and the executor re-raised it in the main process).
Here the first shard is tokenized in the main process and training starts; when the token
buffer runs low, the remaining shards go to a `ProcessPoolExecutor` with the "forkserver"
context, whose workers re-import the script without running its main block, and
`future.result()` re-raises their NameError in the training loop.
"""

import argparse
import multiprocessing as mp
import random
from concurrent.futures import ProcessPoolExecutor

import torch
import torch.nn as nn

STORY_TEXT = (
    "once upon a time there was a little fox who liked to run in the green forest and "
    "one day she met a bear that was very hungry so they went to find honey together"
)
WORDS = STORY_TEXT.split()


class CharTokenizer:
    def __init__(self, corpus):
        chars = sorted(set("".join(corpus)))
        self.stoi = {c: i + 1 for i, c in enumerate(chars)}

    def encode(self, text):
        return [self.stoi.get(c, 0) for c in text]


def make_shard(seed, n_stories=200):
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(60)) for _ in range(n_stories)]


def process_shard(seed):
    stories = make_shard(seed)
    tokens = []
    for story in stories:
        tokens.extend(encode(story))  # HANG: worker-encode
    return tokens


class TinyLM(nn.Module):
    def __init__(self, vocab, dim=64, ctx=32):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.mlp = nn.Sequential(
            nn.Flatten(), nn.Linear(dim * ctx, 256), nn.ReLU(), nn.Linear(256, vocab)
        )

    def forward(self, x):
        return self.mlp(self.emb(x))


def batches(buffer, ctx, bs):
    while len(buffer) > (ctx + 1) * bs:
        chunk = torch.tensor(buffer[: (ctx + 1) * bs]).view(bs, ctx + 1)
        del buffer[: (ctx + 1) * bs]
        yield chunk[:, :-1], chunk[:, -1]


def train(args):
    torch.manual_seed(0)
    model = TinyLM(vocab=64, ctx=args.ctx)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    buffer = process_shard(0)  # first shard in-process
    print(f"shard 0: {len(buffer)} tokens", flush=True)
    pool = ProcessPoolExecutor(max_workers=2, mp_context=mp.get_context("forkserver"))
    step = 0
    next_seed = 1
    while step < args.steps:
        for x, y in batches(buffer, args.ctx, args.batch_size):
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            step += 1
            print(f"step {step} loss {loss.item():.4f}", flush=True)
            if step >= args.steps:
                break
        futures = [pool.submit(process_shard, s) for s in range(next_seed, next_seed + 2)]
        next_seed += 2
        for fut in futures:
            buffer.extend(fut.result())  # HANG: result
        print(f"refilled buffer: {len(buffer)} tokens", flush=True)
    pool.shutdown()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--ctx", type=int, default=32)
    parser.add_argument("--batch-size", type=int, default=32)
    args = parser.parse_args()
    tokenizer = CharTokenizer(WORDS)
    encode = tokenizer.encode  # HANG: main-only-encode
    train(args)
