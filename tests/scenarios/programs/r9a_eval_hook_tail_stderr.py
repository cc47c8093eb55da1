"""Small regression model whose per-epoch evaluation is delegated to a shell hook.

Written from https://github.com/python/cpython/issues/75893 ("subprocess with
stderr=subprocess.STDOUT hang": check_output never returns; the answer there is that "a process
somewhere ... could still write to the write end" -- a background process left behind by the
command inherited the pipe, and Python waits for EOF on it). Here the eval hook scores the
predictions and then starts a dashboard feeder in the background with `nohup tail -F ... &`. The
author redirected its stdout to a file but not its stderr, and nohup only redirects a stream
that is a terminal: the orphaned `tail` keeps the stderr pipe of `subprocess.run(...,
capture_output=True)` open for ever, so `communicate()` never sees EOF, although the hook
itself exited at once.
"""

import os
import subprocess
import tempfile

import torch
from torch import nn

EVAL_HOOK = """#!/bin/sh
set -e
run_dir="$1"
n=$(wc -l < "$run_dir/preds.csv")
echo "eval-hook: scored $n predictions"
# keep the dashboard fed with live metrics while training goes on
nohup tail -F "$run_dir/metrics.jsonl" > "$run_dir/dashboard_feed.log" &  # HANG: daemon
echo "eval-hook: dashboard feeder started"
"""


def run_eval_hook(hook: str, run_dir: str) -> str:
    result = subprocess.run(["sh", hook, run_dir], capture_output=True, text=True, check=True)  # HANG: run
    return result.stdout.strip()


def main() -> None:
    torch.manual_seed(0)
    torch.set_num_threads(1)
    run_dir = tempfile.mkdtemp(prefix="r9a_eval_")
    hook = os.path.join(run_dir, "eval_hook.sh")
    with open(hook, "w") as f:
        f.write(EVAL_HOOK)
    x = torch.randn(2048, 16)
    y = x @ torch.randn(16, 1) + 0.1 * torch.randn(2048, 1)
    model = nn.Sequential(nn.Linear(16, 64), nn.Tanh(), nn.Linear(64, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for epoch in range(5):
        for i in range(0, len(x), 128):
            loss = nn.functional.mse_loss(model(x[i : i + 128]), y[i : i + 128])
            opt.zero_grad()
            loss.backward()
            opt.step()
        print(f"epoch {epoch} train mse {loss.item():.4f}", flush=True)
        with open(os.path.join(run_dir, "metrics.jsonl"), "a") as f:
            f.write(f'{{"epoch": {epoch}, "mse": {loss.item():.5f}}}\n')
        with torch.no_grad(), open(os.path.join(run_dir, "preds.csv"), "w") as f:
            for p in model(x[:256]).squeeze(1).tolist():
                f.write(f"{p:.5f}\n")
        print(f"epoch {epoch} running eval hook", flush=True)
        print(run_eval_hook(hook, run_dir), flush=True)
    print("done", flush=True)


if __name__ == "__main__":
    main()
