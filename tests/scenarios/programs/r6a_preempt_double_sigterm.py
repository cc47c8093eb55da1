"""Preemptible trainer: on SIGTERM it runs a last validation, saves a checkpoint and exits.

Written from https://github.com/sabnzbd/sabnzbd/pull/3534 (a second SIGTERM re-enters the
shutdown path): Python runs a signal handler on the main thread, nested in whatever that thread
is doing, and the shutdown path here is guarded by a non-reentrant threading.Lock. The second
SIGTERM of a preemption (the scheduler signals the job step, then the batch script forwards its
own) arrives while the first handler is still validating inside the lock; the nested handler
blocks on the lock that the interrupted frame beneath it, on the same thread, holds.
"""

import argparse
import os
import signal
import sys
import threading
import time

import torch
from torch import nn


class Trainer:
    def __init__(self, args: argparse.Namespace) -> None:
        torch.manual_seed(0)
        self.args = args
        self.model = nn.Sequential(nn.Linear(256, 512), nn.GELU(), nn.Linear(512, 512),
                                   nn.GELU(), nn.Linear(512, 10))
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=1e-3)
        self.step = 0
        self._shutdown_lock = threading.Lock()
        self._stopping = False
        g = torch.Generator().manual_seed(1)
        self.val_x = torch.randn(args.val_size, 256, generator=g)
        self.val_y = torch.randint(0, 10, (args.val_size,), generator=g)

    def on_sigterm(self, signum, frame) -> None:
        print(f"[signal] got {signal.Signals(signum).name} at step {self.step}", flush=True)
        self.shutdown()

    def validate(self) -> float:
        self.model.eval()
        total = 0.0
        with torch.no_grad():
            for _ in range(self.args.val_passes):
                for i in range(0, len(self.val_x), 128):
                    logits = self.model(self.val_x[i:i + 128])
                    total += nn.functional.cross_entropy(logits, self.val_y[i:i + 128]).item()
        self.model.train()
        return total / (self.args.val_passes * len(self.val_x) / 128)

    def shutdown(self) -> None:
        with self._shutdown_lock:  # HANG: reenter
            if self._stopping:
                return
            print("[shutdown] final validation before checkpoint", flush=True)
            val_loss = self.validate()  # HANG: held
            self._stopping = True
            path = os.path.join(self.args.out, "preempt.pt")
            torch.save({"model": self.model.state_dict(), "step": self.step}, path)
            print(f"[shutdown] val {val_loss:.4f}, saved {path}", flush=True)
        sys.exit(0)

    def train(self) -> None:
        g = torch.Generator().manual_seed(2)
        while self.step < self.args.max_steps:
            x = torch.randn(64, 256, generator=g)
            y = torch.randint(0, 10, (64,), generator=g)
            loss = nn.functional.cross_entropy(self.model(x), y)
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
            self.step += 1
            if self.step % 50 == 0:
                print(f"step {self.step} loss {loss.item():.4f}", flush=True)


def simulate_preemption(delay: float, gap: float) -> None:
    """What the cluster does to us: SIGTERM from the scheduler, then the one that the batch
    script's trap forwards."""
    def fire() -> None:
        time.sleep(delay)
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(gap)
        os.kill(os.getpid(), signal.SIGTERM)
    threading.Thread(target=fire, name="scheduler", daemon=True).start()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--max-steps", type=int, default=100_000)
    parser.add_argument("--val-size", type=int, default=4096)
    parser.add_argument("--val-passes", type=int, default=80)
    parser.add_argument("--out", default=".")
    parser.add_argument("--preempt-after", type=float, default=4.0)
    args = parser.parse_args()
    trainer = Trainer(args)
    signal.signal(signal.SIGTERM, trainer.on_sigterm)
    simulate_preemption(args.preempt_after, gap=1.0)
    trainer.train()


if __name__ == "__main__":
    main()
