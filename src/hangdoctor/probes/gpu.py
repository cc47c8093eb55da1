"""GPU utilisation and memory through NVML (nvidia-ml-py), when it and a GPU are there.

No GPU is a fact, not an error: the sampler then simply records none. NVML can wedge (a GPU
that fell off the bus makes every query block): every NVML call goes through `bounded.call`, and
after one call runs out of time NVML is not asked again; the gap is kept in `error`.
"""

from __future__ import annotations

import contextlib
from typing import Any

from hangdoctor import bounded
from hangdoctor.evidence.model import GpuSample, ProbeError

INIT_TIMEOUT_S = 5.0
SAMPLE_TIMEOUT_S = 1.0


def _open_nvml() -> tuple[Any, list[Any]]:
    import pynvml

    pynvml.nvmlInit()
    count = pynvml.nvmlDeviceGetCount()
    return pynvml, [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(count)]


class GpuSampler:
    """Opens NVML once; `sample()` is cheap afterwards, never raises and never blocks for long."""

    def __init__(self, nvml_opener: Any = _open_nvml) -> None:
        self._nvml: Any = None
        self._handles: list[Any] = []
        #: Why NVML stopped answering, when it did (a wedged driver); None while all is well.
        self.error: ProbeError | None = None
        opened, error = bounded.call("nvml", nvml_opener, INIT_TIMEOUT_S)
        if opened is not None:
            self._nvml, self._handles = opened
        elif error is not None and error.kind == "timeout":
            self.error = error  # NVML is there but does not answer: a gap worth stating

    @property
    def available(self) -> bool:
        """Whether any GPU can be sampled."""
        return bool(self._nvml and self._handles) and self.error is None

    def _read(self) -> tuple[GpuSample, ...]:
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

    def sample(self) -> tuple[GpuSample, ...]:
        """Utilisation and memory of every GPU; nothing once NVML has stopped answering."""
        if not self.available:
            return ()
        samples, error = bounded.call("nvml", self._read, SAMPLE_TIMEOUT_S)
        if error is not None:
            self.error = error
            return ()
        return samples or ()

    def close(self) -> None:
        """Release NVML (not when it is wedged: that call would block too)."""
        if self._nvml is not None and self.error is None:
            bounded.call("nvml", self._nvml.nvmlShutdown, SAMPLE_TIMEOUT_S)
