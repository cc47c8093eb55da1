"""Trainer with a side evaluation worker that should connect back, but dies during set-up.

Written from https://github.com/Garden-AI/rootstock/pull/166 (the parent waited in
`socket.accept()` with no deadline for a model worker that never finished its set-up). Here the
trainer opens a `multiprocessing.connection.Listener` and starts an evaluation worker with the
"spawn" context; the worker builds the evaluation model from its own config, whose hidden size
no longer matches the trainer's checkpoint, so `load_state_dict` raises and the worker exits
before it ever connects. At its first evaluation the trainer waits in `listener.accept()`.
"""

import multiprocessing as mp
from multiprocessing.connection import Client, Listener

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset

AUTHKEY = b"eval-side-channel"
TRAIN_HIDDEN = 64
EVAL_CFG = {"hidden": 48}  # stale copy of the model config used by the eval worker
EVAL_EVERY = 12
STEPS = 40


class RegressionSet(Dataset):
    def __init__(self, n=2048, dim=16):
        g = torch.Generator().manual_seed(0)
        self.x = torch.randn(n, dim, generator=g)
        self.y = self.x.sum(dim=1, keepdim=True) + 0.1 * torch.randn(n, 1, generator=g)

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return self.x[i], self.y[i]


def make_model(hidden):
    return nn.Sequential(nn.Linear(16, hidden), nn.ReLU(), nn.Linear(hidden, 1))


def eval_worker(address, cfg, init_state):
    torch.set_num_threads(1)
    model = make_model(cfg["hidden"])
    model.load_state_dict(init_state)  # HANG: worker-dies
    conn = Client(address, authkey=AUTHKEY)
    while True:
        msg = conn.recv()
        if msg is None:
            break
        model.load_state_dict(msg["state"])
        with torch.no_grad():
            x, y = msg["batch"]
            conn.send(float(nn.functional.mse_loss(model(x), y)))
    conn.close()


def main():
    torch.manual_seed(0)
    model = make_model(TRAIN_HIDDEN)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loader = DataLoader(RegressionSet(), batch_size=64, shuffle=True)
    val_batch = next(iter(DataLoader(RegressionSet(n=256), batch_size=256)))

    ctx = mp.get_context("spawn")
    listener = Listener(("127.0.0.1", 0), authkey=AUTHKEY)
    worker = ctx.Process(
        target=eval_worker, args=(listener.address, EVAL_CFG, model.state_dict()), daemon=True
    )
    worker.start()
    print(f"eval worker started (pid {worker.pid}), listening on {listener.address}", flush=True)

    conn = None
    step = 0
    while step < STEPS:
        for x, y in loader:
            loss = nn.functional.mse_loss(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            step += 1
            print(f"step {step} loss {loss.item():.4f}", flush=True)
            if step % EVAL_EVERY == 0:
                if conn is None:
                    conn = listener.accept()  # HANG: accept
                conn.send({"state": model.state_dict(), "batch": val_batch})
                print(f"step {step} val_loss {conn.recv():.4f}", flush=True)
            if step >= STEPS:
                break
    if conn is not None:
        conn.send(None)
    worker.join()


if __name__ == "__main__":
    main()
