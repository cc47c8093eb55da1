"""Single-process training with stochastic weight averaging done by a background thread: the
training loop hands it a copy of the weights every epoch, and once training is over the
thread averages them and writes the SWA checkpoint.

Written from https://github.com/linkedin/brooklin/pull/978 ("Move wait after the interrupt":
stop() first waited for the event thread to finish and only then told it to stop, so the
wait never returned). Same ordering slip here: `SWAWriter.stop()` joins the writer thread
first and sets `training_done` afterwards, but the writer thread is parked in
`training_done.wait()` and only finishes once that event is set. The main thread waits for
the writer, the writer waits for the main thread.
"""

import argparse
import os
import tempfile
import threading

import torch
from torch import nn


class SWAWriter(threading.Thread):
    def __init__(self, path: str) -> None:
        super().__init__(name="swa-writer", daemon=True)
        self.path = path
        self.snapshots: list[dict[str, torch.Tensor]] = []
        self.lock = threading.Lock()
        self.training_done = threading.Event()

    def add(self, model: nn.Module) -> None:
        with self.lock:
            self.snapshots.append({k: v.detach().clone() for k, v in model.state_dict().items()})

    def run(self) -> None:
        self.training_done.wait()  # HANG: wait
        with self.lock:
            averaged = {k: torch.stack([s[k] for s in self.snapshots]).mean(0)
                        for k in self.snapshots[0]}
        torch.save(averaged, self.path)
        print(f"swa: averaged {len(self.snapshots)} snapshots into {self.path}", flush=True)

    def stop(self) -> None:
        self.join()  # HANG: join
        self.training_done.set()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--swa-start", type=int, default=2)
    args = parser.parse_args()
    g = torch.Generator().manual_seed(0)
    x = torch.randn(2048, 20, generator=g)
    y = (x[:, :5].sum(1) > 0).long()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 2))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    swa = SWAWriter(os.path.join(tempfile.mkdtemp(prefix="swa-"), "swa.pt"))
    swa.start()
    step = 0
    for epoch in range(args.epochs):
        for i in range(0, len(x), 64):
            loss = nn.functional.cross_entropy(model(x[i:i + 64]), y[i:i + 64])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            step += 1
            if step % 16 == 0:
                print(f"step {step} loss {loss.item():.4f}", flush=True)
        if epoch >= args.swa_start:
            swa.add(model)
    print(f"training done after {step} steps, writing SWA weights", flush=True)
    swa.stop()
    print("done", flush=True)


if __name__ == "__main__":
    main()
