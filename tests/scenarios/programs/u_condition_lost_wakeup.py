"""Single-process training that writes each checkpoint on a background thread and, before
overwriting the weights again, waits on a threading.Condition for the writer to say "done".

Written from https://github.com/open-education-hub/operating-systems/issues/150 (a notify()
sent while no thread is waiting on the condition is lost) and bgribble/mfp#14 (the waiter
must check for the state before going to sleep): the writer finishes and notifies while the
trainer is still evaluating; the trainer then calls `wait()` without checking any predicate
and sleeps for a notification that was already sent. The writer thread has exited.
"""

import io
import threading

import torch
from torch import nn


class AsyncCheckpointer:
    def __init__(self) -> None:
        self.saved = threading.Condition()
        self.last_bytes = 0

    def _write(self, state: dict) -> None:
        buffer = io.BytesIO()
        torch.save(state, buffer)
        self.last_bytes = buffer.tell()
        with self.saved:
            self.saved.notify_all()

    def save(self, model: nn.Module) -> None:
        state = {k: v.clone() for k, v in model.state_dict().items()}
        threading.Thread(target=self._write, args=(state,), name="ckpt-writer").start()

    def wait_until_saved(self) -> None:
        with self.saved:
            self.saved.wait()  # HANG: wait


def evaluate(model: nn.Module) -> float:
    g = torch.Generator().manual_seed(123)
    losses = []
    with torch.no_grad():
        for _ in range(50):
            x = torch.randn(512, 16, generator=g)
            losses.append(nn.functional.mse_loss(model(x), x.sum(1, keepdim=True)).item())
    return sum(losses) / len(losses)


def main() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.001)
    checkpointer = AsyncCheckpointer()
    g = torch.Generator().manual_seed(0)
    for step in range(1, 101):
        x = torch.randn(32, 16, generator=g)
        loss = nn.functional.mse_loss(model(x), x.sum(1, keepdim=True))
        optimizer.zero_grad()
        loss.backward()
        print(f"step {step} loss {loss.item():.4f}", flush=True)
        if step % 25 == 0:
            checkpointer.save(model)
            print(f"step {step} eval loss {evaluate(model):.4f}", flush=True)
            checkpointer.wait_until_saved()  # the optimizer must not touch the weights yet
        optimizer.step()


if __name__ == "__main__":
    main()
