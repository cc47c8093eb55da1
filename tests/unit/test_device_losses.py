"""The instrumentation's reading of GPU losses without a device sync, exercised on CPU tensors
(the same stacking, copying and sequence numbers; on a GPU the copies are asynchronous into
pinned memory, which benchmarks/gpu_checks.py covers)."""

from __future__ import annotations

import importlib.util
import math
from types import ModuleType

import pytest

from hangdoctor.instrument import bootstrap_dir

torch = pytest.importorskip("torch")


def status_module() -> ModuleType:
    """The probe's counters module, loaded apart from the probe (stdlib only, no siblings)."""
    spec = importlib.util.spec_from_file_location(
        "_status_under_test", bootstrap_dir() / "_hangdoctor_status.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def losses() -> object:
    kept = status_module().DeviceLosses(pinned=False)
    kept.FLUSH_EVERY_S = 3600.0  # flushed by the test, not by the clock
    return kept


def loss(value: float, requires_grad: bool = True) -> object:
    leaf = torch.tensor(1.0, requires_grad=requires_grad)
    return leaf * value if requires_grad else torch.tensor(value)


def test_losses_are_counted_when_their_copy_arrives(losses):
    for value in (2.0, float("nan"), 3.0, float("inf"), 4.0):
        losses.add(loss(value))
    assert losses.collect() is False and losses.seen == 0  # nothing sent yet
    losses.flush()
    assert losses.collect() is True
    assert (losses.seen, losses.nonfinite) == (5, 2)
    assert losses.last_loss == 4.0 and losses.last_nonfinite_at is not None


def test_a_trailing_nan_leaves_no_last_loss(losses):
    for value in (1.0, float("nan")):
        losses.add(loss(value))
    losses.flush()
    losses.collect()
    assert losses.last_loss is None and losses.nonfinite == 1


def test_kept_losses_carry_no_graph(losses):
    losses.add(loss(2.0))
    assert not losses.kept[0].requires_grad and losses.kept[0].grad_fn is None


def test_mixed_shapes_and_dtypes_are_stacked(losses):
    losses.add(torch.tensor([1.5]))
    losses.add(torch.tensor(float("nan"), dtype=torch.float64))
    losses.add(torch.tensor(2.5, dtype=torch.bfloat16))
    losses.flush()
    losses.collect()
    assert (losses.seen, losses.nonfinite, losses.last_loss) == (3, 1, 2.5)


def test_a_copy_not_yet_arrived_is_not_counted(losses):
    losses.add(loss(1.0))
    losses.flush()
    _, _, marker, number = losses.in_flight[0]
    marker.fill_(number - 1)  # as if the sequence number had not reached host memory yet
    assert losses.collect() is False and losses.seen == 0
    marker.fill_(number)
    assert losses.collect() is True and losses.seen == 1


def test_a_lagging_device_drops_batches_but_never_grows(losses):
    for _ in range(losses.BUFFERS + 3):
        losses.add(loss(1.0))
        losses.flush()
    assert len(losses.in_flight) == losses.BUFFERS  # the rest were dropped, not queued
    losses.collect()
    assert losses.seen == losses.BUFFERS
    losses.add(loss(float("nan")))
    losses.flush()
    losses.collect()
    assert losses.nonfinite == 1  # buffers came back into use


def test_many_losses_flush_early(losses):
    for _ in range(losses.MAX_KEPT):
        losses.add(loss(0.5, requires_grad=False))
    assert not losses.kept  # flushed when full
    losses.collect()
    assert losses.seen == losses.MAX_KEPT and math.isclose(losses.last_loss, 0.5)
