"""The torch hook that reads a training loss where a loss function returns it, for the losses
that never reach backward().

A loop that checks its loss and, when it is NaN or Inf, skips the batch and draws another
(`if not torch.isfinite(loss): continue`) never calls backward() on a non-finite loss, so the
backward hook (`_hangdoctor_hooks`) never sees one: the job computes at full speed and takes no
step, which passes for a long silent evaluation. Here every `torch.nn.functional` loss (the
`nn` loss modules call them) is wrapped: a CPU scalar loss that carries a gradient (a training
loss, not an evaluation's) and is not finite is counted at once; backward() on it later does
not count it again. Finite losses are left to backward(), as before; a GPU loss is not read
here (that would cost a device sync per step).
"""

from __future__ import annotations

import functools
import math
import types
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # torch is only imported by the job itself
    from collections.abc import Callable
    from types import ModuleType

    from torch import Tensor

    from hangdoctor.instrument.bootstrap import _hangdoctor_hooks as hooks
    from hangdoctor.instrument.bootstrap import _hangdoctor_state as shared
    from hangdoctor.instrument.bootstrap import _hangdoctor_writer as writer
else:
    import _hangdoctor_hooks as hooks
    import _hangdoctor_state as shared
    import _hangdoctor_writer as writer

probe = shared.probe
_status = shared.status

#: Loss functions of `torch.nn.functional` whose names do not end in `_loss`.
_NAMED_OTHERWISE = ("cross_entropy", "binary_cross_entropy", "binary_cross_entropy_with_logits",
                    "kl_div")


def hook_loss_functions(torch: ModuleType) -> None:
    import torch.nn.functional as functional

    tensor_type = torch.Tensor
    tracing = getattr(torch._C, "_get_tracing_state", None)  # torch.jit.trace at work
    for name in sorted(vars(functional)):
        original = getattr(functional, name)
        if not isinstance(original, types.FunctionType) or shared.is_wrapper(original):
            continue
        if name.endswith("_loss") or name in _NAMED_OTHERWISE:
            setattr(functional, name, _wrap(original, tensor_type, tracing))


def _wrap(
    original: types.FunctionType,
    tensor_type: type[Tensor],
    tracing: Callable[[], object] | None,
) -> Callable[..., object]:
    """The wrapper, made to live in the original's module: TorchScript, scripting a module
    whose `forward` calls `F.mse_loss`, compiles the original's source (`__wrapped__`) and
    resolves its names in the wrapper's globals and closure, which must then be torch's. The
    closure's names are ours alone (`_hd_`), so that none hides one of torch's."""
    _hd_original, _hd_tensor, _hd_tracing, _hd_probe = original, tensor_type, tracing, probe
    _hd_note, _hd_hide = _note_training_loss, hooks._hide_wrapper_frame

    def loss_function(*args: object, **kwargs: object) -> object:
        # Traced (torch.compile, torch.jit.trace), or one loss inside another: pass through.
        if (_hd_probe.compiling is not None and _hd_probe.compiling()) or (
                _hd_tracing is not None and _hd_tracing() is not None) or getattr(
                _hd_probe.tls, "in_loss", False):
            return _hd_original(*args, **kwargs)
        _hd_probe.tls.in_loss = True
        try:
            loss = _hd_original(*args, **kwargs)
        except BaseException as error:
            _hd_hide(error)
            raise
        finally:
            _hd_probe.tls.in_loss = False
        _hd_note(loss, _hd_tensor)
        return loss

    wrapper = types.FunctionType(loss_function.__code__, original.__globals__,
                                 original.__name__, None, loss_function.__closure__)
    functools.update_wrapper(wrapper, original)
    shared.mark_wrapper(wrapper)
    return wrapper


def _note_training_loss(loss: object, tensor_type: type[Tensor]) -> None:
    try:
        if (type(loss) is not tensor_type or not loss.requires_grad or not loss.is_cpu
                or not loss.dtype.is_floating_point or loss.numel() != 1):
            return
        if math.isfinite(float(loss.detach().item())):
            return
        hooks.count_nonfinite_loss()
        _status.nonfinite_unbacked += 1
        writer.changed()
    except Exception:
        pass
