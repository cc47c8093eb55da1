"""A preprocessing process turns raw text shards into token tensors and streams them to the
trainer over a one-way multiprocessing Pipe; the trainer trains on each shard as it arrives and
treats EOFError on the pipe as "producer finished".

Written from https://github.com/Bogdanp/dramatiq/pull/707 ("Close write_pipe after forking":
the parent never closed its copy of the write end, so when the child died the read() on the
pipe never saw EOF and hung). Same mistake here: the trainer keeps `send_end` open after
starting the producer. The producer crashes on a malformed shard, its copy of the write end is
closed, but the trainer's own copy keeps the pipe alive, so `recv()` blocks forever instead of
raising EOFError.
"""

import multiprocessing as mp

import torch
from torch import nn

VOCAB = 64
SEQ = 16


def tokenize(shard: str) -> list:
    return [int(tok) % VOCAB for tok in shard.split()]  # raises on a malformed token


def producer(shards, send_end) -> None:
    for shard in shards:
        send_end.send(tokenize(shard))  # plain lists: cheap to pickle, no shared storage
    send_end.close()  # normal end of stream: the trainer gets EOFError


def make_shards(count: int):
    gen = torch.Generator().manual_seed(0)
    shards = []
    for i in range(count):
        ids = torch.randint(0, 10_000, (8 * SEQ,), generator=gen).tolist()
        words = [str(t) for t in ids]
        if i == 3:
            words[17] = "1e4-corrupt"  # one bad record in shard 3
        shards.append(" ".join(words))
    return shards


def main() -> None:
    torch.manual_seed(0)
    torch.set_num_threads(1)
    ctx = mp.get_context("fork")
    recv_end, send_end = ctx.Pipe(duplex=False)  # HANG: never-closed
    proc = ctx.Process(target=producer, args=(make_shards(8), send_end), name="tokenizer")
    proc.start()
    # bug: `send_end.close()` belongs here, right after start()

    model = nn.Sequential(nn.Embedding(VOCAB, 32), nn.Flatten(), nn.Linear(32 * (SEQ - 1), VOCAB))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    shard_no = 0
    while True:
        try:
            ids = recv_end.recv()  # HANG: recv
        except EOFError:
            break
        batch = torch.tensor(ids, dtype=torch.long).view(-1, SEQ)
        inputs, target = batch[:, :-1], batch[:, -1]
        loss = nn.functional.cross_entropy(model(inputs), target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(f"shard {shard_no} loss {loss.item():.4f}", flush=True)
        shard_no += 1
    proc.join()
    print("all shards consumed", flush=True)


if __name__ == "__main__":
    main()
