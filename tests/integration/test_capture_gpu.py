"""The capture reads the GPUs (NVML) at every snapshot, as it reads /proc and the stacks: `dump`
can then tell a GPU kept busy behind a waiting host from one that went idle. NVML here is a
stand-in with nvidia-ml-py's interface and an H200's readings (no GPU in CI)."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest

from hangdoctor.capture.tree import CaptureOptions, capture_tree
from hangdoctor.probes.gpu import GpuSampler
from hangdoctor.probes.pystacks import StackOptions

H200 = 143_771 * 2**20


class FakeNvml:
    """The calls GpuSampler makes, answering like one H200 whose kernel spins."""

    def __init__(self, block: threading.Event | None = None) -> None:
        self.block = block
        self.reads = 0

    def nvmlDeviceGetUtilizationRates(self, handle: Any) -> SimpleNamespace:
        if self.block is not None:
            self.block.wait(30)  # a wedged driver
        self.reads += 1
        return SimpleNamespace(gpu=100, memory=3)

    def nvmlDeviceGetMemoryInfo(self, handle: Any) -> SimpleNamespace:
        return SimpleNamespace(total=H200, used=2 * 2**30, free=H200 - 2 * 2**30)

    def nvmlShutdown(self) -> None:
        pass


@pytest.fixture
def sleeper() -> Iterator[subprocess.Popen[bytes]]:
    proc = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(120)"],
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        yield proc
    finally:
        proc.kill()
        proc.wait(timeout=10)


def test_every_snapshot_carries_nvml_readings(sleeper):
    nvml = FakeNvml()
    gpus = GpuSampler(nvml_opener=lambda: (nvml, ["handle-0"]))
    options = CaptureOptions(samples=2, interval_s=0.2, stacks=StackOptions(locals=False))
    bundle = capture_tree(sleeper.pid, options, gpus=gpus)
    assert len(bundle.snapshots) == 2
    for snapshot in bundle.snapshots:
        [reading] = snapshot.gpus
        assert reading.index == 0 and reading.utilization_percent == 100.0
        assert reading.memory_total_bytes == H200
    assert nvml.reads >= 2  # one per snapshot (the sampler's own thread may read too)
    assert "nvml" in bundle.timings_s


def test_a_wedged_nvml_costs_one_time_limit_and_is_reported(sleeper):
    release = threading.Event()
    gpus = GpuSampler(nvml_opener=lambda: (FakeNvml(block=release), ["handle-0"]))
    try:
        bundle = capture_tree(sleeper.pid, CaptureOptions(samples=2, interval_s=0.2), gpus=gpus)
    finally:
        release.set()
    assert all(s.gpus == () for s in bundle.snapshots)
    assert any(e.probe == "nvml" and e.kind == "timeout" for e in bundle.errors)
    assert bundle.timings_s["nvml"] < 3.0  # asked once, then left alone


def test_no_nvml_means_no_readings_and_no_error(sleeper):
    def missing() -> tuple[Any, list[Any]]:
        raise ModuleNotFoundError("No module named 'pynvml'")

    bundle = capture_tree(
        sleeper.pid, CaptureOptions(samples=2, interval_s=0.2), gpus=GpuSampler(nvml_opener=missing)
    )
    assert all(s.gpus == () for s in bundle.snapshots)
    assert not [e for e in bundle.errors if e.probe == "nvml"]
