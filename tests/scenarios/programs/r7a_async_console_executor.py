"""An asyncio training driver: the model trains in the event loop (yielding between steps so
that the async checkpoint writer and the operator console can run), and operator commands
("save", "lr 0.01", "stop") arrive on a `queue.Queue` that the console front-end fills. The
coroutine waits for the next command with `loop.run_in_executor(None, commands.get)`; when
training ends on its own it cancels that future and returns.

Written from https://github.com/jaredrhod/backtalk/issues/24 ("Process never exits after
hangup: asyncio.run() deadlocks joining blocked run_in_executor threads": "Cancelling
`typed_fut` ... cancels the asyncio futures, but it does not touch the underlying OS threads,
which keep blocking"), see also https://github.com/flux-framework/flux-core/issues/6434 (job
validator hangs at exit joining `concurrent.futures` threads). Cancelling the asyncio future
leaves the executor thread parked in `Queue.get()` with no timeout; only the caller could put a
command that wakes it, and it never will. `asyncio.run()` then shuts the default executor down
with `wait=True` and waits for that thread: the job logs "training finished" and never exits.
"""

import argparse
import asyncio
import os
import queue
import tempfile

import torch
from torch import nn


async def write_checkpoint(model: nn.Module, path: str) -> None:
    state = {k: v.clone() for k, v in model.state_dict().items()}
    await asyncio.to_thread(torch.save, state, path)


async def train(args, commands: queue.Queue, out_dir: str) -> None:
    loop = asyncio.get_running_loop()
    torch.manual_seed(0)
    x = torch.randn(4096, 20)
    y = x @ torch.randn(20, 1) + 0.1 * torch.randn(4096, 1)
    model = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.02)
    command = loop.run_in_executor(None, commands.get)  # HANG: blocking-get
    pending = []
    for step in range(args.steps):
        idx = torch.randint(0, len(x), (128,))
        loss = nn.functional.mse_loss(model(x[idx]), y[idx])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if command.done():
            cmd = command.result()
            if cmd == "stop":
                break
            if cmd.startswith("lr "):
                for group in optimizer.param_groups:
                    group["lr"] = float(cmd.split()[1])
            command = loop.run_in_executor(None, commands.get)
        if step % 100 == 0:
            print(f"step {step} loss {loss.item():.4f}", flush=True)
            pending.append(asyncio.create_task(
                write_checkpoint(model, os.path.join(out_dir, f"step{step}.pt"))))
        await asyncio.sleep(0)
    await asyncio.gather(*pending)
    command.cancel()  # HANG: cancel-leaves-thread
    print(f"training finished, final loss {loss.item():.4f}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=600)
    args = parser.parse_args()
    torch.set_num_threads(1)
    commands: queue.Queue = queue.Queue()  # filled by the operator console, when one is attached
    with tempfile.TemporaryDirectory(prefix="ckpt-") as out_dir:
        asyncio.run(train(args, commands, out_dir))  # HANG: executor-shutdown
    print("exiting", flush=True)


if __name__ == "__main__":
    main()
