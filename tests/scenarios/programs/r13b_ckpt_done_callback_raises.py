"""Asynchronous checkpointing whose completion record is published from a done callback.

Written from https://github.com/allenai/OLMo-core/pull/831 (async checkpointing: a callback
on the write's future publishes the completion record and then completes the future the
trainer awaits before the next save). Here the callback records the checkpoint's metrics in a
JSON manifest; the loss it puts there is still a tensor, so `json.dumps` raises TypeError.
concurrent.futures only logs an exception raised in a done callback, so the completion future
is never set, and the trainer waits for it before its next checkpoint.
"""

import json
import os
import tempfile
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from functools import partial

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset

SAVE_EVERY = 5
STEPS = 30


class Digits(Dataset):
    def __init__(self, n=4096):
        g = torch.Generator().manual_seed(1)
        self.x = torch.randn(n, 64, generator=g)
        self.y = (self.x[:, :8].sum(dim=1) > 0).long()

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return self.x[i], self.y[i]


class AsyncCheckpointer:
    def __init__(self, root):
        self.root = root
        self.pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ckpt-writer")
        self.manifest = os.path.join(root, "manifest.jsonl")
        self.lock = threading.Lock()
        self.pending = None

    def _on_written(self, completion, step, path, metrics, fut):
        record = {"step": step, "path": path, "bytes": os.path.getsize(path), **metrics}
        line = json.dumps(record)  # HANG: callback-raises
        with self.lock, open(self.manifest, "a") as f:
            f.write(line + "\n")
        completion.set_result(record)

    def save_async(self, step, model, opt, metrics):
        self.await_last()
        path = os.path.join(self.root, f"step-{step:06d}.pt")
        state = {"model": model.state_dict(), "optim": opt.state_dict(), "step": step}
        completion = Future()
        write = self.pool.submit(torch.save, state, path)
        write.add_done_callback(partial(self._on_written, completion, step, path, metrics))
        self.pending = completion

    def await_last(self):
        if self.pending is not None:
            record = self.pending.result()  # HANG: await-save
            print(f"checkpoint committed: {record['path']}", flush=True)
            self.pending = None


def main():
    torch.manual_seed(0)
    root = tempfile.mkdtemp(prefix="ckpt-")
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 2))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    loader = DataLoader(Digits(), batch_size=128, shuffle=True)
    ckpt = AsyncCheckpointer(root)
    step = 0
    while step < STEPS:
        for x, y in loader:
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            step += 1
            print(f"step {step} loss {loss.item():.4f}", flush=True)
            if step % SAVE_EVERY == 0:
                ckpt.save_async(step, model, opt, {"loss": loss.detach()})
            if step >= STEPS:
                break
    ckpt.await_last()
    print("training done", flush=True)


if __name__ == "__main__":
    main()
