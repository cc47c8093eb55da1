"""A kernel that never finishes (torch.cuda._sleep spins for 10**13 clock cycles: hours), and
the host waiting for it in `loss.item()`. Prints READY once the kernel is queued."""

import torch
from _common import exit_after

exit_after()
torch.manual_seed(0)
model = torch.nn.Linear(256, 1).cuda()
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
x, y = torch.randn(64, 256, device="cuda"), torch.randn(64, 1, device="cuda")
for step in range(1000):
    optimizer.zero_grad()
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    optimizer.step()
    if step == 20:
        torch.cuda._sleep(10**13)  # a custom kernel whose loop never ends
        print("READY", flush=True)
    value = loss.item()  # HANG: item
    print(f"step {step} loss {value:.4f}", flush=True)
