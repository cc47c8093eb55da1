"""Checkpoints are written by a background thread so the training loop does not wait for the
disk. A `state_lock` protects the shared bookkeeping (which step was last saved, the list of
files written) that both the loop and the writer update.

Written from https://github.com/donislawdev/BeanNetworkTester/pull/34 ("Fix STOP hanging ...":
`stop()` held `_stop_lock` while joining the worker threads, and a worker that was itself
finishing needed that same lock; only the 2 s join timeout broke the cycle). Here the same
shape has no timeout: at the end of training `finish()` takes `state_lock` so that no step can
slip in, posts the stop sentinel and joins the writer; the writer, on the sentinel, takes
`state_lock` to record its final manifest. Each thread waits for the other forever.
"""

import os
import queue
import tempfile
import threading

import torch
from torch import nn


class AsyncCheckpointer:
    def __init__(self, directory: str):
        self.directory = directory
        self.state_lock = threading.Lock()
        self.saved = []
        self.last_saved_step = -1
        self.jobs = queue.Queue()
        self.thread = threading.Thread(target=self._run, name="ckpt-writer")
        self.thread.start()

    def _run(self) -> None:
        while True:
            job = self.jobs.get()
            if job is None:
                with self.state_lock:  # HANG: lock
                    manifest = os.path.join(self.directory, "manifest.txt")
                    with open(manifest, "w") as handle:
                        handle.write("\n".join(self.saved))
                return
            step, state = job
            path = os.path.join(self.directory, f"step{step:04d}.pt")
            torch.save(state, path)
            with self.state_lock:  # HANG: lock
                self.saved.append(path)
                self.last_saved_step = step

    def submit(self, step: int, model: nn.Module) -> None:
        state = {k: v.detach().clone() for k, v in model.state_dict().items()}
        self.jobs.put((step, state))

    def finish(self) -> None:
        with self.state_lock:  # HANG: held-across-join
            self.jobs.put(None)
            self.thread.join()  # HANG: join
            print(f"checkpoints written: {len(self.saved)}", flush=True)


def main() -> None:
    torch.manual_seed(0)
    torch.set_num_threads(1)
    ckpt = AsyncCheckpointer(tempfile.mkdtemp(prefix="r7b_ckpt_"))
    model = nn.Sequential(nn.Linear(32, 64), nn.Tanh(), nn.Linear(64, 4))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    x = torch.randn(2048, 32)
    y = torch.randint(0, 4, (2048,))
    for step in range(40):
        idx = torch.randint(0, 2048, (128,))
        loss = nn.functional.cross_entropy(model(x[idx]), y[idx])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % 10 == 9:
            ckpt.submit(step, model)
            print(f"step {step} loss {loss.item():.4f} (checkpoint queued)", flush=True)
    ckpt.finish()
    print("done", flush=True)


if __name__ == "__main__":
    main()
