"""Sentiment classifier whose validation goes through the same micro-batching scorer that
serves it online: callers submit single examples and get a Future back.

Written from https://github.com/shakacode/messagebus/pull/23 ("Fix hang due to unflushed
partial batches": "partial batches (< batch_size) that were never auto-triggered... blocked
forever"): the batcher only runs the model when it has a full batch and has no flush timer.
The validation set is not a multiple of the batch size, so the last futures are never resolved:
the trainer waits in `Future.result()`, the batcher in `Queue.get()` for requests nobody sends.
"""

import argparse
import queue
import threading
from concurrent.futures import Future

import torch
from torch import nn


class MicroBatcher(threading.Thread):
    def __init__(self, model: nn.Module, batch_size: int) -> None:
        super().__init__(name="micro-batcher", daemon=True)
        self.model, self.batch_size = model, batch_size
        self.requests: queue.Queue = queue.Queue()

    def submit(self, tokens: torch.Tensor) -> Future:
        future: Future = Future()
        self.requests.put((tokens, future))
        return future

    def run(self) -> None:
        pending = []
        while True:
            pending.append(self.requests.get())  # HANG: get
            if len(pending) < self.batch_size:  # HANG: full-batch
                continue
            batch = torch.stack([tokens for tokens, _ in pending])
            with torch.no_grad():
                scores = self.model(batch).softmax(-1)
            for (_, future), score in zip(pending, scores, strict=True):
                future.set_result(score)
            pending = []


class BagOfWords(nn.Module):
    def __init__(self, vocab: int = 2000, dim: int = 32) -> None:
        super().__init__()
        self.embed = nn.EmbeddingBag(vocab, dim, mode="mean")
        self.head = nn.Linear(dim, 2)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.head(self.embed(tokens))


def make_reviews(n: int, seed: int):
    g = torch.Generator().manual_seed(seed)
    tokens = torch.randint(0, 2000, (n, 40), generator=g)
    labels = ((tokens < 300).sum(1) > (tokens >= 1700).sum(1)).long()
    return tokens, labels


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--serve-batch", type=int, default=32)
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    train_x, train_y = make_reviews(3000, seed=0)
    val_x, val_y = make_reviews(500, seed=1)
    model = BagOfWords()
    optimizer = torch.optim.Adam(model.parameters(), lr=5e-3)
    scorer = MicroBatcher(model, args.serve_batch)
    scorer.start()
    for epoch in range(args.epochs):
        model.train()
        for i in range(0, len(train_x), 64):
            loss = nn.functional.cross_entropy(model(train_x[i:i + 64]), train_y[i:i + 64])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        print(f"epoch {epoch} train loss {loss.item():.4f}; validating", flush=True)
        model.eval()
        futures = [scorer.submit(tokens) for tokens in val_x]
        scores = torch.stack([f.result() for f in futures])  # HANG: result
        accuracy = (scores.argmax(1) == val_y).float().mean().item()
        print(f"epoch {epoch} val acc {accuracy:.3f}", flush=True)


if __name__ == "__main__":
    main()
