"""Image-regression training that saves a checkpoint every few steps and records each one in a
SQLite run index; a background writer thread does the saving and indexing so the loop does not
wait, and the loop calls `jobs.join()` at the end of each epoch to be sure all are written.

Written from https://github.com/peter-wangxu/persist-queue/issues/175 ("SQLite objects created
in a thread can only be used in that same thread"): the index connection is opened in the main
thread and used from the writer thread, so its first `execute` raises ProgrammingError. The
exception ends the writer thread (its traceback goes to stderr among the training lines), the
checkpoint jobs it would have marked done stay undone, and `jobs.join()` waits for ever.
"""

import os
import queue
import sqlite3
import tempfile
import threading

import torch
from torch import nn

EPOCHS, STEPS, SAVE_EVERY = 3, 40, 10


def writer(jobs, db, ckpt_dir):
    while True:
        step, state = jobs.get()
        path = os.path.join(ckpt_dir, f"step{step}.pt")
        torch.save(state, path)
        db.execute("INSERT INTO ckpt VALUES (?, ?)", (step, path))  # HANG: cross-thread-sqlite
        db.commit()
        jobs.task_done()


def main():
    ckpt_dir = tempfile.mkdtemp(prefix="r11a_ckpt_")
    db = sqlite3.connect(os.path.join(ckpt_dir, "index.sqlite"))  # HANG: connect-main
    db.execute("CREATE TABLE ckpt (step INTEGER, path TEXT)")
    jobs = queue.Queue()
    threading.Thread(target=writer, args=(jobs, db, ckpt_dir), daemon=True).start()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Flatten(), nn.Linear(16 * 16, 64), nn.ReLU(), nn.Linear(64, 1))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    step = 0
    for epoch in range(EPOCHS):
        for _ in range(STEPS):
            x = torch.rand(32, 1, 16, 16)
            loss = nn.functional.mse_loss(model(x), x.mean((1, 2, 3)).unsqueeze(1))
            opt.zero_grad()
            loss.backward()
            opt.step()
            step += 1
            if step % SAVE_EVERY == 0:
                jobs.put((step, {k: v.clone() for k, v in model.state_dict().items()}))
                print(f"epoch {epoch} step {step} loss {loss.item():.4f}", flush=True)
        jobs.join()  # HANG: join
        print(f"epoch {epoch} checkpoints written", flush=True)


if __name__ == "__main__":
    main()
