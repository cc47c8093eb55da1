"""A training loop with a NaN guard that skips the bad step and tries again, as in the
skip-on-NaN pattern of https://kempnerinstitute.github.io/KempnerForge/resilience/nan-detection.html
(zero the gradients, skip, `continue`), but without a cap on consecutive NaNs. Once the
weights are NaN every loss is NaN: the loop spins forever on `optimizer.step()` calls that
change nothing, never advancing its step counter, printing nothing."""

import torch
from torch import nn


def batches(generator: torch.Generator):
    while True:
        yield torch.randn(32, 8, generator=generator)


def main() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    data = batches(torch.Generator().manual_seed(0))
    step = 0
    while step < 200:  # HANG: loop
        x = next(data)
        if step == 30:
            with torch.no_grad():
                model[0].weight.fill_(float("inf"))  # a bad update poisons the weights
        loss = model(x).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if not torch.isfinite(loss):
            optimizer.zero_grad()  # HANG: loop
            continue  # HANG: loop
        step += 1
        print(f"step {step} loss {loss.item():.4f}", flush=True)


if __name__ == "__main__":
    main()
