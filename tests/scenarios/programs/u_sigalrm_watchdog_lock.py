"""Single-process training with a per-step watchdog: each step arms a one-shot SIGALRM timer,
and if a step overruns, the handler prints a snapshot of the training metrics to help debug
the slow step. Every few steps the loop also records gradient statistics into the same
metrics object, under its lock.

Written from https://github.com/python/cpython/issues/126434 ("multiprocessing.Event.set() can
deadlock when called from a signal handler": the handler takes a non-reentrant lock that the
main thread already holds when the signal arrives) and zulip/zulip#20338 (a stop() called
from a signal handler may find the lock already held by the very thread it runs on). Python
runs the handler on the main thread, in the middle of whatever it was doing: here the
watchdog fires while the main thread is inside `with metrics.lock:` recording statistics,
and the handler's own `with metrics.lock:` waits for a lock that only its caller can release.
"""

import argparse
import signal
import threading
import time

import torch
from torch import nn


class Metrics:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.losses: list[float] = []
        self.grad_stats: dict[str, list[tuple[float, float, float]]] = {}
        self.step = 0

    def snapshot(self) -> dict:
        with self.lock:  # HANG: handler-acquire
            recent = self.losses[-20:]
            return {"step": self.step, "mean_loss": sum(recent) / max(len(recent), 1),
                    "tracked": len(self.grad_stats)}


class StepWatchdog:
    def __init__(self, metrics: Metrics, budget_s: float) -> None:
        self.metrics, self.budget_s = metrics, budget_s
        self.started = 0.0
        signal.signal(signal.SIGALRM, self._on_timeout)

    def arm(self) -> None:
        self.started = time.monotonic()
        signal.setitimer(signal.ITIMER_REAL, self.budget_s)

    def disarm(self) -> None:
        signal.setitimer(signal.ITIMER_REAL, 0)

    def _on_timeout(self, signum, frame) -> None:
        state = self.metrics.snapshot()
        print(f"watchdog: step running for {time.monotonic() - self.started:.1f}s "
              f"(budget {self.budget_s}s), metrics {state}", flush=True)


def record_grad_stats(metrics: Metrics, model: nn.Module, bins: int) -> None:
    for name, p in model.named_parameters():  # HANG: held
        g = p.grad.detach().flatten()  # HANG: held
        for _ in range(bins):  # HANG: held
            sample = g[torch.randperm(g.numel())[:4096]]  # HANG: held
            q = torch.quantile(sample, torch.tensor([0.05, 0.5, 0.95]))  # HANG: held
            metrics.grad_stats.setdefault(name, []).append(tuple(q.tolist()))  # HANG: held


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--stats-every", type=int, default=25)
    parser.add_argument("--step-budget", type=float, default=1.0)
    args = parser.parse_args()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(256, 512), nn.GELU(), nn.Linear(512, 512), nn.GELU(),
                          nn.Linear(512, 10))
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-4)
    metrics = Metrics()
    watchdog = StepWatchdog(metrics, args.step_budget)
    for step in range(1, args.steps + 1):
        watchdog.arm()
        x = torch.randn(128, 256)
        y = torch.randint(0, 10, (128,))
        loss = nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        with metrics.lock:  # HANG: held
            metrics.step = step
            metrics.losses.append(loss.item())
            if step % args.stats_every == 0:
                record_grad_stats(metrics, model, bins=400)  # HANG: held
        watchdog.disarm()
        if step % 5 == 0:
            print(f"step {step} loss {loss.item():.4f}", flush=True)


if __name__ == "__main__":
    main()
