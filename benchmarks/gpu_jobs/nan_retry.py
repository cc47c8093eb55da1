"""The loss becomes NaN at step 30; the loop retries the step until the loss is finite again,
which it never is: the optimizer keeps stepping, the output has stopped."""

import torch
from _common import device, exit_after

exit_after()
on = device()
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(),
                            torch.nn.Linear(64, 1)).to(on)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
x, y = torch.randn(128, 64, device=on), torch.randn(128, 1, device=on)
for step in range(1000):
    scale = float("nan") if step >= 30 else 1.0  # the data turns bad at step 30
    while True:  # retry the step until its loss is finite
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x) * scale, y)  # HANG: retry
        loss.backward()
        optimizer.step()
        if torch.isfinite(loss):
            break
    print(f"step {step} loss {loss.item():.4f}", flush=True)
