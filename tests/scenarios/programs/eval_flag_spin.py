"""The trainer hands evaluation to a thread and polls a flag until the evaluation is done. The
evaluation thread fails on a shape error, so the flag is never set and the trainer polls on."""

import threading

import torch
from torch import nn

results: dict[str, float] = {}
state = {"eval_done": False}


def evaluate(model: nn.Module) -> None:
    with torch.no_grad():
        x = torch.randn(64, 15)  # wrong feature count: raises in the thread
        results["val_loss"] = nn.functional.mse_loss(model(x), x[:, :1]).item()
    state["eval_done"] = True


def main() -> None:
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for step in range(20):
        x = torch.randn(32, 16)
        loss = nn.functional.mse_loss(model(x), x.sum(1, keepdim=True))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(f"step {step} loss {loss.item():.4f}", flush=True)
    threading.Thread(target=evaluate, args=(model,), name="evaluator").start()
    while not state["eval_done"]:  # HANG: poll
        pass  # HANG: poll
    print(f"validation loss {results['val_loss']:.4f}", flush=True)


if __name__ == "__main__":
    main()
