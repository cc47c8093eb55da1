"""Fills GPU memory to 99% (as PyTorch's caching allocator keeps a healthy job's memory), then
the main thread waits for results on a queue that nothing will ever fill."""

import queue

import torch
from _common import exit_after

exit_after()
free, total = torch.cuda.mem_get_info()
held = torch.empty(int(free - 0.01 * total), dtype=torch.uint8, device="cuda")
model = torch.nn.Linear(64, 1).cuda()
print(f"GPU memory in use: {1 - torch.cuda.mem_get_info()[0] / total:.1%}", flush=True)
results: queue.Queue = queue.Queue()  # the thread that was to fill it was never started
batch = results.get()  # HANG: get
