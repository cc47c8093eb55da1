"""HD498 gpu.memory_exhausted: The job failed of device memory exhaustion. The fallback for a
failed job whose exception names that mechanism (see rules/_failure.py)."""

from __future__ import annotations

from hangdoctor.rules._failure_rule import FailureRule
from hangdoctor.taxonomy import Category


class GpuMemoryFailure(FailureRule):
    """the job failed of device memory exhaustion

    Fires when: the job failed of `CUDA out of memory` (or another device allocator's) and no other
    rule found an error: names it and its line in your code

    Why: The job failed because a device allocation did not fit in the GPU's free memory. The line
    that asked is where to start: the peak of a step (batch size, activations, optimizer states) or
    memory kept alive across steps decides it.

    Instead: Use less device memory at that line: a smaller batch, gradient accumulation, mixed
    precision, activation checkpointing; `torch.cuda.memory_summary()` shows what holds it.
    """

    id = "HD498"
    category = Category.GPU_MEMORY_EXHAUSTED
