"""A collective that fails: on GPUs, two NCCL ranks on one device (no set_device), which NCCL
refuses at the first collective; on CPU, a gloo peer that left. The traceback must go from the
user's line into torch, with no frame of the instrumentation."""

import os

import torch
import torch.distributed as dist
from _common import device, exit_after

exit_after(120)
on = device()
dist.init_process_group("nccl" if on == "cuda" else "gloo")
if on == "cpu" and dist.get_rank() == 1:
    os._exit(0)  # leaves without a word: rank 0's collective fails in gloo
tensor = torch.ones(4, device=on)
dist.all_reduce(tensor)  # HANG: collective
dist.destroy_process_group()
