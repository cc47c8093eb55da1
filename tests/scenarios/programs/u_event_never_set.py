"""Single-process training with an optional background evaluator: at the end of each epoch
the trainer hands the weights to the evaluator and waits on a threading.Event for its
result.

Written from https://github.com/dhyansraj/mcp-mesh/pull/819 (`ready.wait()` without a
timeout: if the thread that should set the event never gets there, the waiter blocks for
ever): the evaluator thread is only started when --async-eval is given, but the trainer
waits for its result unconditionally. Nobody will ever set the event; the main thread is the
only thread of the process.
"""

import argparse
import threading

import torch
from torch import nn


class BackgroundEvaluator(threading.Thread):
    def __init__(self, data: tuple[torch.Tensor, torch.Tensor]) -> None:
        super().__init__(daemon=True, name="evaluator")
        self.data, self.request, self.done = data, threading.Event(), threading.Event()
        self.state: dict = {}
        self.result = float("nan")

    def submit(self, model: nn.Module) -> None:
        self.state = {k: v.clone() for k, v in model.state_dict().items()}
        self.done.clear()
        self.request.set()

    def run(self) -> None:
        model = nn.Linear(10, 1)
        while self.request.wait():
            self.request.clear()
            model.load_state_dict(self.state)
            with torch.no_grad():
                self.result = nn.functional.mse_loss(model(self.data[0]), self.data[1]).item()
            self.done.set()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--async-eval", action="store_true")
    parser.add_argument("--epochs", type=int, default=5)
    args = parser.parse_args()
    g = torch.Generator().manual_seed(0)
    x = torch.randn(640, 10, generator=g)
    y = x @ torch.randn(10, 1, generator=g)
    evaluator = BackgroundEvaluator((x[:128], y[:128]))
    if args.async_eval:
        evaluator.start()  # HANG: never-started
    torch.manual_seed(0)
    model = nn.Linear(10, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    for epoch in range(args.epochs):
        for i in range(128, 640, 32):
            loss = nn.functional.mse_loss(model(x[i:i + 32]), y[i:i + 32])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        print(f"epoch {epoch} train loss {loss.item():.4f}", flush=True)
        evaluator.submit(model)
        evaluator.done.wait()  # HANG: wait
        print(f"epoch {epoch} eval loss {evaluator.result:.4f}", flush=True)


if __name__ == "__main__":
    main()
