"""Training with a command listener thread on stdin ("save", "stop"), made a daemon thread.

Written from https://github.com/deepfakes/faceswap/issues/172 (the trainer read the console
in a background thread to let the user stop training; after the last epoch the process did
not exit, waiting for that thread). The usual fix, marking the listener thread daemon, is
what this job does: training and the final save finish, but the listener is still parked
in `input()` on a stdin pipe nobody writes to, holding stdin's buffer lock, and interpreter
finalisation aborts with "Fatal Python error: _enter_buffered_busy: could not acquire lock
for <_io.BufferedReader name='<stdin>'> at interpreter shutdown, possibly due to daemon
threads" (SIGABRT).
"""

import os
import tempfile
import threading

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

EPOCHS = 3
commands = {"save": threading.Event(), "stop": threading.Event()}


def listen_for_commands():
    while True:
        line = input()  # HANG: stdin-read
        cmd = line.strip().lower()
        if cmd in commands:
            commands[cmd].set()
            print(f"[listener] got '{cmd}'", flush=True)


def main():
    torch.manual_seed(0)
    listener = threading.Thread(  # HANG: daemon-listener
        target=listen_for_commands, name="cmd-listener", daemon=True
    )
    listener.start()
    print("type 'save' to checkpoint now, 'stop' to end training", flush=True)

    x = torch.randn(2048, 20)
    y = (x @ torch.randn(20, 1)).tanh()
    loader = DataLoader(TensorDataset(x, y), batch_size=128, shuffle=True)
    model = nn.Sequential(nn.Linear(20, 64), nn.GELU(), nn.Linear(64, 1))
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3)
    out_dir = tempfile.mkdtemp(prefix="run-")
    step = 0
    for epoch in range(EPOCHS):
        for xb, yb in loader:
            loss = nn.functional.mse_loss(model(xb), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
            step += 1
            print(f"epoch {epoch} step {step} loss {loss.item():.4f}", flush=True)
            if commands["save"].is_set():
                torch.save(model.state_dict(), os.path.join(out_dir, f"step{step}.pt"))
                commands["save"].clear()
            if commands["stop"].is_set():
                break
    torch.save(model.state_dict(), os.path.join(out_dir, "final.pt"))
    print(f"training finished after {step} steps, saved {out_dir}/final.pt", flush=True)


if __name__ == "__main__":
    main()
