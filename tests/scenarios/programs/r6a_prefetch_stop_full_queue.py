"""Step-budgeted language-model training with a background batch prefetcher.

Written from https://github.com/NVIDIA-NeMo/Automodel/pull/3049 (review: "`stop()` sets
`_stop_event` and joins, but the put loop never observes `_stop_event`... the consumer has
stopped draining"): the trainer breaks out after `--max-steps`, and `close()` sets the stop
event and joins the prefetch thread. That thread is parked in `queue.put()` on the full queue,
where it never looks at the event, and nobody reads the queue any more.
"""

import argparse
import queue
import threading

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

_END = object()


class BackgroundPrefetcher:
    def __init__(self, loader: DataLoader, depth: int = 4) -> None:
        self.loader = loader
        self.queue: queue.Queue = queue.Queue(maxsize=depth)
        self.stop_event = threading.Event()
        self.thread = threading.Thread(target=self._produce, name="prefetch", daemon=True)
        self.thread.start()

    def _produce(self) -> None:
        epoch = 0
        while not self.stop_event.is_set():
            for batch in self.loader:
                self.queue.put(batch)  # HANG: put
                if self.stop_event.is_set():
                    return
            epoch += 1
        self.queue.put(_END)

    def __iter__(self):
        while (item := self.queue.get()) is not _END:
            yield item

    def close(self) -> None:
        self.stop_event.set()
        self.thread.join()  # HANG: join


class TinyLM(nn.Module):
    """Next-token MLP over token embeddings (the baseline before the transformer)."""

    def __init__(self, vocab: int = 512, dim: int = 64) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 256), nn.ReLU(), nn.Linear(256, vocab))

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.mlp(self.embed(tokens))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--max-steps", type=int, default=30)
    parser.add_argument("--seq-len", type=int, default=64)
    parser.add_argument("--batch-size", type=int, default=16)
    args = parser.parse_args()
    torch.set_num_threads(1)  # a model this small only loses from intra-op threads
    torch.manual_seed(0)
    tokens = torch.randint(0, 512, (4096, args.seq_len + 1))
    loader = DataLoader(TensorDataset(tokens), batch_size=args.batch_size, shuffle=True)
    model = TinyLM()
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
    prefetcher = BackgroundPrefetcher(loader)
    for step, (batch,) in enumerate(prefetcher, start=1):
        logits = model(batch[:, :-1])
        loss = nn.functional.cross_entropy(logits.reshape(-1, 512), batch[:, 1:].reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % 10 == 0:
            print(f"step {step} loss {loss.item():.4f}", flush=True)
        if step >= args.max_steps:
            print(f"reached max_steps={args.max_steps}, stopping", flush=True)
            break
    prefetcher.close()
    torch.save(model.state_dict(), "tiny_lm.pt")
    print("saved tiny_lm.pt", flush=True)


if __name__ == "__main__":
    main()
