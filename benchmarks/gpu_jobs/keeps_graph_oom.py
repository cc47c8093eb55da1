"""Keeps every step's loss, and with it every step's graph and activations, until CUDA runs out
of memory (capped at a fifth of the GPU so that it comes quickly)."""

import torch
from _common import exit_after

exit_after()
torch.cuda.set_per_process_memory_fraction(0.2)
model = torch.nn.Sequential(torch.nn.Linear(4096, 4096), torch.nn.ReLU(),
                            torch.nn.Linear(4096, 1)).cuda()
x = torch.randn(8192, 4096, device="cuda")
losses = []
for step in range(100_000):
    loss = model(x).square().mean()  # HANG: oom
    losses.append(loss)  # for a plot at the end: keeps the whole graph alive
    print(f"step {step}", flush=True)
