"""GPU utilisation and memory through NVML (nvidia-ml-py), when it and a GPU are there.

No GPU is a fact, not an error: the sampler then simply records none. NVML can wedge (a GPU
that fell off the bus makes every query block), so NVML is only ever called from a thread of
its own: the supervision loop reads the latest readings and never waits for NVML. A reading
that is overdue, or an NVML that cannot be opened where an NVIDIA driver is installed, becomes
`error`: a gap that the report states.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable
from typing import Any

from hangdoctor import bounded
from hangdoctor.evidence.model import GpuSample, ProbeError
from hangdoctor.i18n import N_, _

INIT_TIMEOUT_S = 5.0
SAMPLE_TIMEOUT_S = 2.0
SAMPLE_EVERY_S = 1.0
PENDING_S = 1.0  # an NVML call pending longer is worth a line in a report written meanwhile
NVML_HELP = N_("pip install 'hangdoctor[gpu]'   (installs nvidia-ml-py)")

#: Opens NVML: (the pynvml module, a handle per device).
Opener = Callable[[], tuple[Any, list[Any]]]


def _open_nvml() -> tuple[Any, list[Any]]:
    import pynvml

    pynvml.nvmlInit()
    count = pynvml.nvmlDeviceGetCount()
    return pynvml, [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(count)]


def nvidia_driver_present() -> bool:
    """Whether an NVIDIA kernel driver is loaded here (then a missing NVML is a gap)."""
    return os.path.exists("/proc/driver/nvidia/version") or os.path.exists("/dev/nvidiactl")


def _not_answering(seconds: float) -> str:
    return _(
        "NVML did not answer within {seconds:g} s (a wedged driver or a GPU that fell off the "
        "bus); GPUs were not sampled after that",
        seconds=seconds,
    )


class GpuSampler:
    """Reads every GPU about once a second in a background thread; `sample()` returns the
    latest readings at once and never blocks, whatever NVML does."""

    def __init__(
        self,
        nvml_opener: Opener = _open_nvml,
        every_s: float = SAMPLE_EVERY_S,
        driver_present: Callable[[], bool] = nvidia_driver_present,
    ) -> None:
        self._opener = nvml_opener
        self._every_s = every_s
        self._driver_present = driver_present
        self._lock = threading.Lock()
        self._latest: tuple[GpuSample, ...] = ()
        self._nvml: Any = None
        self._handles: list[Any] = []
        self._started = time.monotonic()
        self._opened = False
        self._busy_since: float | None = None  # when the NVML call in flight began
        self._stop = threading.Event()
        self._error: ProbeError | None = None
        self._thread = threading.Thread(target=self._run, name="hangdoctor-nvml", daemon=True)
        self._thread.start()

    @property
    def error(self) -> ProbeError | None:
        """Why there are no GPU readings, when a GPU was expected; None while all is well."""
        with self._lock:
            if self._error is None and self._busy_since is not None:
                limit = SAMPLE_TIMEOUT_S if self._opened else INIT_TIMEOUT_S
                waited = time.monotonic() - self._busy_since
                if waited > limit:
                    self._error = ProbeError(
                        probe="nvml",
                        kind="timeout",
                        message=_not_answering(limit),
                    )
            return self._error

    def gap(self) -> ProbeError | None:
        """What a report should say about the GPUs now: `error`, or an NVML call that has been
        pending for over a second (a report written meanwhile must not stay silent on it)."""
        error = self.error
        if error is not None:
            return error
        with self._lock:
            busy_since = self._busy_since
        if busy_since is None or time.monotonic() - busy_since < PENDING_S:
            return None
        return ProbeError(
            probe="nvml",
            kind="timeout",
            message=_(
                "NVML did not answer within {seconds:g} s (still pending when this report was "
                "written); GPUs not sampled",
                seconds=PENDING_S,
            ),
        )

    @property
    def available(self) -> bool:
        """Whether GPUs are being sampled."""
        return self._opened and bool(self._handles) and self.error is None

    def sample(self) -> tuple[GpuSample, ...]:
        """The latest utilisation and memory of every GPU; nothing once NVML stopped answering."""
        if self.error is not None:
            return ()
        with self._lock:
            return self._latest

    def wait_opened(self, timeout_s: float = INIT_TIMEOUT_S) -> None:
        """Wait (at most `timeout_s`) until NVML is open, or known to be absent or wedged: a
        one-off capture (`dump`) wants readings from its first snapshot on."""
        deadline = time.monotonic() + timeout_s
        while (
            not self._opened
            and self.error is None
            and self._thread.is_alive()
            and time.monotonic() < deadline
        ):
            time.sleep(0.01)

    def read_now(self, timeout_s: float = SAMPLE_TIMEOUT_S) -> tuple[GpuSample, ...]:
        """Read every GPU now, for a snapshot of a capture, with a time limit: a wedged NVML
        costs that limit once, then becomes `error` and is not asked again."""
        if not self.available:
            return ()
        readings, failure = bounded.call("nvml", self._read, timeout_s)
        if readings is None:
            with self._lock:
                self._error = self._error or ProbeError(
                    probe="nvml",
                    kind="timeout" if failure is None or failure.kind == "timeout" else "failed",
                    message=_not_answering(timeout_s),
                )
            return ()
        with self._lock:
            self._latest = readings
        return readings

    def close(self) -> None:
        """Stop sampling; release NVML unless it is wedged (that call would block too)."""
        self._stop.set()

    # the NVML thread ---------------------------------------------------------------------------
    def _timed(self, fn: Callable[[], Any]) -> Any:
        with self._lock:
            self._busy_since = time.monotonic()
        try:
            return fn()
        finally:
            with self._lock:
                self._busy_since = None

    def _run(self) -> None:
        try:
            self._nvml, self._handles = self._timed(self._opener)
        except Exception as error:
            # No nvidia-ml-py is a gap only where a GPU driver is; an NVML that is installed
            # but refuses to start (driver not loaded, library mismatch) always is one.
            if not isinstance(error, ImportError) or self._driver_present():
                kind = "missing_tool" if isinstance(error, ImportError) else "failed"
                with self._lock:
                    self._error = ProbeError(
                        probe="nvml",
                        kind=kind,
                        help=_(NVML_HELP) if kind == "missing_tool" else None,
                        message=_(
                            "GPUs not sampled: NVML unavailable ({error_type}: {error})",
                            error_type=type(error).__name__,
                            error=error,
                        ),
                    )
            return
        self._opened = True
        while not self._stop.is_set() and self._handles:
            readings = self._timed(self._read)
            with self._lock:
                self._latest = readings
            self._stop.wait(self._every_s)
        with contextlib.suppress(Exception):
            self._nvml.nvmlShutdown()

    def _read(self) -> tuple[GpuSample, ...]:
        samples = []
        for index, handle in enumerate(self._handles):
            utilization = memory = None
            with contextlib.suppress(Exception):
                utilization = float(self._nvml.nvmlDeviceGetUtilizationRates(handle).gpu)
            with contextlib.suppress(Exception):
                memory = self._nvml.nvmlDeviceGetMemoryInfo(handle)
            samples.append(
                GpuSample(
                    index=index,
                    utilization_percent=utilization,
                    memory_used_bytes=int(memory.used) if memory is not None else None,
                    memory_total_bytes=int(memory.total) if memory is not None else None,
                )
            )
        return tuple(samples)
