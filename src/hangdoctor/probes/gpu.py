"""GPU utilisation and memory through NVML (nvidia-ml-py), when it and a GPU are there.

No GPU is a fact, not an error: the sampler then simply records none.
"""

from __future__ import annotations

import contextlib
from typing import Any

from hangdoctor.evidence.model import GpuSample


class GpuSampler:
    """Opens NVML once; `sample()` is cheap afterwards and never raises."""

    def __init__(self) -> None:
        self._nvml: Any = None
        self._handles: list[Any] = []
        try:
            import pynvml  # type: ignore[import-not-found]

            pynvml.nvmlInit()
            count = pynvml.nvmlDeviceGetCount()
            self._handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(count)]
            self._nvml = pynvml
        except Exception:
            self._nvml = None

    @property
    def available(self) -> bool:
        """Whether any GPU can be sampled."""
        return bool(self._nvml and self._handles)

    def sample(self) -> tuple[GpuSample, ...]:
        """Utilisation and memory of every GPU."""
        if not self.available:
            return ()
        samples = []
        for index, handle in enumerate(self._handles):
            utilization = memory = None
            with contextlib.suppress(Exception):
                utilization = float(self._nvml.nvmlDeviceGetUtilizationRates(handle).gpu)
            with contextlib.suppress(Exception):
                memory = self._nvml.nvmlDeviceGetMemoryInfo(handle)
            samples.append(GpuSample(
                index=index,
                utilization_percent=utilization,
                memory_used_bytes=int(memory.used) if memory is not None else None,
                memory_total_bytes=int(memory.total) if memory is not None else None,
            ))
        return tuple(samples)

    def close(self) -> None:
        """Release NVML."""
        if self._nvml is not None:
            with contextlib.suppress(Exception):
                self._nvml.nvmlShutdown()
