"""The losses a JAX or TensorFlow job's compiled steps return, read without waiting for the
device.

A step that returns a NaN loss is retried or skipped by many training loops (halve the
learning rate and try the batch again); each retry is a jitted call or a `tf.function` call,
which counts as a step, so without its loss a loop that can never get a finite one passes for
training. The scalars (0-d floating-point arrays or tensors) a step returns, at its top level or
one level down (a `(state, metrics)` pair, a dict of metrics), are kept; at a later step those
whose values are ready are read and counted as losses, NaN/Inf ones as non-finite. A JAX array
says whether it is ready (`jax.Array.is_ready`: never a wait for the device); a TensorFlow eager
tensor a `tf.function` returned has its value (eager execution is synchronous). A scalar still
computing is kept for the next look, a few at most. Reading a value costs microseconds, a step
of a small model not many more: the outputs are looked at `EVERY_S` at most, so the losses
counted are a sample, as the policy needs (were the losses since the last reading all NaN?).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hangdoctor.instrument.bootstrap import _hangdoctor_hooks as hooks
    from hangdoctor.instrument.bootstrap import _hangdoctor_state as shared
else:
    import _hangdoctor_hooks as hooks
    import _hangdoctor_state as shared

_KEPT = 8  # scalars waiting for their values, at most
EVERY_S = 0.2
_pending: list[object] = []
#: When the jitted calls' outputs are next looked at (a list: the jax hooks read it inline).
next_look_at = [0.0]


def note_outputs(result: object, now: float) -> None:
    """Read the scalars earlier calls returned that are ready now; keep this call's."""
    next_look_at[0] = now + EVERY_S
    try:
        waiting = [array for array in _pending if not _read_if_ready(array)]
        _pending[:] = (waiting + list(_scalars(result)))[-_KEPT:]
    except Exception:
        _pending.clear()


def _scalars(result: object, depth: int = 0) -> list[object]:
    if _is_scalar(result):
        return [result]
    if depth >= 2:
        return []
    if isinstance(result, (tuple, list)):
        parts: list[object] = list(result)
    elif isinstance(result, dict):
        parts = list(result.values())
    else:
        return []
    return [s for part in parts[:16] for s in _scalars(part, depth + 1)]


def _is_scalar(value: object) -> bool:
    """A 0-d floating-point JAX array, or TensorFlow eager tensor."""
    if not (hasattr(value, "is_ready") or hasattr(value, "numpy")):
        return False
    shape = getattr(value, "shape", None)
    if shape is None or len(shape) != 0:  # TensorFlow's TensorShape([]) has no length either
        return False
    dtype = getattr(value, "dtype", None)
    return getattr(dtype, "kind", None) == "f" or getattr(dtype, "is_floating", False) is True


def _read_if_ready(array: object) -> bool:
    """Count the scalar when its value is there; False while the device still computes it."""
    ready = getattr(array, "is_ready", None)
    if ready is not None and not ready():
        return False
    value = float(array)  # type: ignore[arg-type]
    status = shared.status
    if math.isfinite(value):
        status.losses_seen += 1
        status.last_loss = value
    else:
        hooks.count_nonfinite_loss()
    return True
