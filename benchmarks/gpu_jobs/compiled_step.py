"""A compiled training step (backward inside the compiled function, the optimizer step compiled
too), to check that the instrumentation changes neither torch.compile's graphs nor the result.
Prints the final loss (bit for bit)."""

import torch
from _common import device, exit_after

exit_after()
on = device()
backend = "inductor" if on == "cuda" else "eager"  # inductor on CPU compiles for minutes here
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(),
                            torch.nn.Linear(128, 1)).to(on)
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
x, y = torch.randn(256, 64, device=on), torch.randn(256, 1, device=on)
compiled_model = torch.compile(model, backend=backend)


@torch.compile(backend=backend)
def train_step() -> torch.Tensor:
    loss = torch.nn.functional.mse_loss(compiled_model(x), y)
    loss.backward()
    return loss


@torch.compile(backend=backend)
def optimizer_step() -> None:
    optimizer.step()


for _ in range(6):
    optimizer.zero_grad()
    loss = train_step()
    optimizer_step()
print(f"LOSS {loss.item().hex()}")
