"""The GPU sampler never makes its caller wait for NVML, and says why GPUs went unobserved."""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace

from hangdoctor.probes import gpu
from hangdoctor.probes.gpu import GpuSampler

_FOREVER = threading.Event()


def _wedged_opener():
    _FOREVER.wait()
    raise AssertionError("unreachable")


def _missing_opener():
    raise ImportError("No module named 'pynvml'")


class _Nvml:
    """Answers once, then blocks on every query (the GPU fell off the bus mid-run)."""

    def __init__(self) -> None:
        self.calls = 0

    def nvmlDeviceGetUtilizationRates(self, handle):
        self.calls += 1
        if self.calls > 1:
            _FOREVER.wait()
        return SimpleNamespace(gpu=40)

    def nvmlDeviceGetMemoryInfo(self, handle):
        return SimpleNamespace(used=1, total=2)


def test_a_wedged_nvml_never_blocks_sample_and_becomes_a_timeout(monkeypatch):
    monkeypatch.setattr(gpu, "INIT_TIMEOUT_S", 0.3)
    sampler = GpuSampler(_wedged_opener)
    # The wedged call never returns: a sample() that waited for it would never return either.
    result: list[tuple[object, ...]] = []
    caller = threading.Thread(target=lambda: result.append(sampler.sample()), daemon=True)
    caller.start()
    caller.join(timeout=30)
    assert result == [()], "sample() waited for the wedged NVML"
    time.sleep(0.5)
    assert sampler.error is not None and sampler.error.kind == "timeout"
    assert sampler.gap() == sampler.error
    sampler.close()


def test_a_gpu_that_stops_answering_mid_run(monkeypatch):
    monkeypatch.setattr(gpu, "SAMPLE_TIMEOUT_S", 0.3)
    nvml = _Nvml()
    sampler = GpuSampler(lambda: (nvml, [0]), every_s=0.05)
    time.sleep(0.2)
    assert [s.utilization_percent for s in sampler.sample()] == [40.0]
    time.sleep(0.5)
    assert sampler.sample() == ()
    assert sampler.error is not None and "did not answer" in sampler.error.message
    sampler.close()


def test_missing_nvml_is_a_gap_only_where_a_driver_is():
    with_driver = GpuSampler(_missing_opener, driver_present=lambda: True)
    without = GpuSampler(_missing_opener, driver_present=lambda: False)
    time.sleep(0.1)
    assert with_driver.error is not None and with_driver.error.kind == "missing_tool"
    assert with_driver.error.help is not None
    assert without.error is None and without.gap() is None


def test_an_installed_nvml_that_refuses_to_start_is_always_a_gap():
    def refusing():
        raise RuntimeError("Driver Not Loaded")

    sampler = GpuSampler(refusing, driver_present=lambda: False)
    time.sleep(0.1)
    assert sampler.error is not None and sampler.error.kind == "failed"
    assert "Driver Not Loaded" in sampler.error.message
