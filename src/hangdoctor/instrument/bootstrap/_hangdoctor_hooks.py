"""The torch hooks that count a job's progress: optimizer steps, backward (the loss, and where
the job's code stands when it synchronises), DataLoader batches and the time spent waiting for
them, collectives (numbered per process group, with the user's line that made each) and
`new_group` calls.

The hooks only count and timestamp, never change the job's tensors (they read losses: a CPU
loss at once, a GPU loss through an asynchronous copy, never a device sync), and swallow their
own errors: watching the job must never change or break it. An exception raised through a
wrapper leaves no frame of ours in the user's traceback (Python >= 3.11), and a wrapper traced
by torch.compile passes straight through to torch's function.
"""

from __future__ import annotations

import functools
import math
import os
import sys
import time
import types
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # torch is only imported by the job itself
    from collections.abc import Callable
    from types import FrameType, ModuleType

    from torch import Tensor
    from torch.optim import Optimizer

    from hangdoctor.instrument.bootstrap import _hangdoctor_protocol as protocol
    from hangdoctor.instrument.bootstrap import _hangdoctor_state as shared
    from hangdoctor.instrument.bootstrap import _hangdoctor_writer as writer
    from hangdoctor.instrument.bootstrap._hangdoctor_status import Place
else:
    import _hangdoctor_protocol as protocol
    import _hangdoctor_state as shared
    import _hangdoctor_writer as writer

COLLECTIVES = protocol.COLLECTIVES
_SITES = 64  # the distinct call sites counted
probe = shared.probe
_status = shared.status  # this process's counters, the hooks' to count into
_changed = writer.changed
_WRAPPERS = shared.WRAPPERS


def _hide_wrapper_frame(error: BaseException) -> None:
    """Drop our wrapper's frame from an exception passing through it, so that the user's
    traceback goes from their line straight into torch's. A bare `raise` then re-raises with
    this traceback and adds no entry of its own (Python >= 3.11; earlier versions keep it)."""
    try:
        tb = error.__traceback__
        if tb is not None and tb.tb_frame.f_code in _WRAPPERS:
            error.__traceback__ = tb.tb_next
    except Exception:
        pass


def _now() -> float:
    return time.time()


def hook_optimizer(torch: ModuleType) -> None:
    import torch.optim.optimizer as optimizer

    def on_step(opt: Optimizer, args: tuple[object, ...], kwargs: dict[str, object]) -> None:
        count_step()  # nothing else: torch.compile may trace this hook

    optimizer.register_optimizer_step_post_hook(on_step)


def count_step() -> None:
    """One optimizer step taken."""
    try:
        _status.steps += 1
        _status.last_step_at = _now()
        _changed()
    except Exception:
        pass


def hook_dataloader(torch: ModuleType) -> None:
    from torch.utils.data.dataloader import _BaseDataLoaderIter as base

    original = base.__next__
    if shared.is_wrapper(original):
        return
    clock = time.perf_counter

    @functools.wraps(original)
    def __next__(self: base) -> object:
        if probe.compiling is not None and probe.compiling():
            return original(self)  # traced by torch.compile: as if we were not here
        started = clock()
        try:
            batch = original(self)
        except StopIteration as error:  # the epoch's data is done
            _note_wait(started, clock, got_batch=False, ran_out=True)
            _hide_wrapper_frame(error)
            raise
        except BaseException as error:  # a worker's error
            _note_wait(started, clock, got_batch=False)
            _hide_wrapper_frame(error)
            raise
        _note_wait(started, clock, got_batch=True)
        return batch

    shared.mark_wrapper(__next__)
    base.__next__ = __next__  # type: ignore[method-assign]  # patching torch is the point


def _note_wait(started: float, clock: Callable[[], float], got_batch: bool,
               ran_out: bool = False) -> None:
    try:
        _status.data_wait_s += clock() - started
        if ran_out:
            _status.data_ends += 1
        if got_batch:
            _status.batches += 1
            _status.last_batch_at = _now()
        _changed()
    except Exception:
        pass


def hook_distributed(torch: ModuleType) -> None:
    """Wrap the collectives on `torch.distributed` and `distributed_c10d` (one wrapper per
    function, so that both names stay the same object, as they were)."""
    import torch.distributed as dist

    if not dist.is_available():
        return
    import torch.distributed.distributed_c10d as c10d

    probe.dist = dist
    _learn_library_dirs(torch)
    wrappers: dict[int, object] = {}
    for module in (dist, c10d):
        for name in (*COLLECTIVES, "new_group", "init_process_group"):
            try:
                function = getattr(module, name, None)
                if function is None or shared.is_wrapper(function):
                    continue
                if id(function) not in wrappers:
                    wrappers[id(function)] = (
                        _wrap_new_group(function) if name == "new_group"
                        else _wrap_init(function) if name == "init_process_group"
                        else _wrap_collective(name, function))
                setattr(module, name, wrappers[id(function)])
            except Exception:
                pass


def _wrap_init(function: Callable[..., object]) -> Callable[..., object]:
    """Note the rank and world size a process joins with, as it starts to join: a process
    that never gets through `init_process_group` (a peer that is not coming, a world size
    that counts one rank too many) is otherwise a rank of unknown number, which only py-spy's
    view of the call's local variables would tell."""

    @functools.wraps(function)
    def init_process_group(*args: object, **kwargs: object) -> object:
        _note_joining(function, args, kwargs)
        try:
            return function(*args, **kwargs)
        except BaseException as error:
            _hide_wrapper_frame(error)
            raise

    shared.mark_wrapper(init_process_group)
    return init_process_group


def _note_joining(function: Callable[..., object], args: tuple[object, ...],
                  kwargs: dict[str, object]) -> None:
    """The rank and world size given to `init_process_group`, or (-1, the default) those it
    reads from the environment, as the job sets it at that moment."""
    try:
        import inspect

        given = inspect.signature(function).bind_partial(*args, **kwargs).arguments
        rank, size = given.get("rank", -1), given.get("world_size", -1)
        if not isinstance(rank, int) or rank < 0:
            rank = int(os.environ["RANK"]) if os.environ.get("RANK", "").isdigit() else None
        if not isinstance(size, int) or size < 0:
            size = (int(os.environ["WORLD_SIZE"])
                    if os.environ.get("WORLD_SIZE", "").isdigit() else None)
        if _status.rank is None and rank is not None:
            _status.rank = rank
            _status.world_size = size
            _changed()
    except Exception:
        pass


_GROUP_SITES = 16  # the most recent new_group calls kept, with their numbers


def _wrap_new_group(function: Callable[..., object]) -> Callable[..., object]:
    """Count `new_group` calls and note where each was made. Every rank must call new_group
    for every group, members or not, in the same order: groups are named by how many were
    created before, so a rank that created one more waits in the next creation for peers
    that registered under another name. Counting them is how a capture tells."""

    @functools.wraps(function)
    def new_group(*args: object, **kwargs: object) -> object:
        _note_group_creation()
        try:
            return function(*args, **kwargs)
        except BaseException as error:
            _hide_wrapper_frame(error)
            raise

    shared.mark_wrapper(new_group)
    return new_group


def _note_group_creation() -> None:
    try:
        state = _status
        state.groups_created += 1
        caller = sys._getframe(2)  # this function, the wrapper, then the caller
        state.group_sites = [*state.group_sites[-(_GROUP_SITES - 1):],
                             (state.groups_created, caller.f_code.co_filename, caller.f_lineno,
                              caller.f_code.co_name)]
        _changed()
    except Exception:
        pass


def _async_op_index(function: Callable[..., object]) -> int | None:
    """Position of the `async_op` parameter, to tell async calls from blocking ones."""
    return _parameter_index(function, "async_op")


def _parameter_index(function: Callable[..., object], name: str) -> int | None:
    """Position of the parameter `name` of `function`, or None."""
    import inspect

    try:
        names = list(inspect.signature(function).parameters)
        return names.index(name)
    except (ValueError, TypeError):
        return None


def _wrap_collective(name: str, function: Callable[..., object]) -> Callable[..., object]:
    async_index = _async_op_index(function)
    group_index = _parameter_index(function, "group")

    @functools.wraps(function)
    def collective(*args: object, **kwargs: object) -> object:
        # Nested (all_gather_object calls all_gather) or traced by torch.compile: pass through,
        # so one user call counts once and the compiler sees the function it knows.
        if getattr(probe.tls, "in_collective", False) or (
                probe.compiling is not None and probe.compiling()):
            return function(*args, **kwargs)
        _note_collective_call(name, args, kwargs, group_index)
        seq = _enter_collective(name, args, kwargs, async_index)
        probe.tls.in_collective = True
        try:
            return function(*args, **kwargs)
        except BaseException as error:
            _hide_wrapper_frame(error)
            raise
        finally:
            probe.tls.in_collective = False
            if seq is not None:
                _exit_collective(name, seq)

    shared.mark_wrapper(collective)
    return collective


_USER_FRAMES_SEARCHED = 64
_library_dirs: tuple[str, ...] = ()  # set by _learn_library_dirs
_is_user_code: dict[types.CodeType, bool] = {}  # per code object, at most _CODES entries
_CODES = 4096


def _learn_library_dirs(torch: ModuleType) -> None:
    """The folders whose code is not the user's: the standard library, torch's own, ours."""
    global _library_dirs
    try:
        import sysconfig

        paths = sysconfig.get_paths()
        dirs = {paths.get("stdlib"), paths.get("platstdlib"),
                os.path.dirname(os.path.abspath(str(torch.__file__))),
                os.path.dirname(os.path.abspath(__file__))}
        _library_dirs = tuple(d.rstrip(os.sep) + os.sep for d in dirs if d)
    except Exception:
        pass


def _user_code(code: types.CodeType) -> bool:
    """Whether `code` is the user's own: outside torch, site-packages and the standard
    library (and not generated: `<string>`, `<frozen ...>`)."""
    known = _is_user_code.get(code)
    if known is None:
        path = code.co_filename
        known = not (path.startswith("<") or "site-packages" in path or "dist-packages" in path
                     or path.startswith(_library_dirs))
        if len(_is_user_code) < _CODES:
            _is_user_code[code] = known
    return known


def _group_name(group: object) -> str:
    """The process group's name as torch numbers groups (`0`: the default one)."""
    if group is None:
        return "0"
    name = getattr(group, "group_name", None)
    return name if isinstance(name, str) else f"<{type(group).__name__}>"


def _input_sizes(args: tuple[object, ...], kwargs: dict[str, object]) -> str | None:
    """The shape of the first tensor argument, as text (`[8, 4]`); None when there is none."""
    for value in (*args, *kwargs.values()):
        shape = getattr(value, "shape", None)
        if shape is not None:
            return str(list(shape))
    return None


_CALLERS = 2  # user frames kept beyond the innermost: enough to tell a shared helper's callers


def _user_callers(frame: FrameType | None) -> tuple[Place, ...]:
    """The next user frames outward (at most _CALLERS): two metrics that gather through one
    helper function are told apart by who called the helper."""
    found: list[Place] = []
    for _ in range(_USER_FRAMES_SEARCHED):
        if frame is None or len(found) >= _CALLERS:
            break
        if _user_code(frame.f_code):
            found.append((frame.f_code.co_filename, frame.f_lineno, frame.f_code.co_name))
        frame = frame.f_back
    return tuple(found)


def _note_collective_call(name: str, args: tuple[object, ...], kwargs: dict[str, object],
                          group_index: int | None) -> None:
    """Number the call in its process group and note the user's line that made it: the ranks'
    n-th calls must match, and where they first do not is where the ranks fell out of step
    (an extra all_gather under `if rank == 0:` at step 0 of a run that stops at step 500).
    Constant cost: a few frames walked (each code object classified once), one tuple kept in
    a bounded ring, one counter per site."""
    try:
        state = _status
        group = kwargs.get("group")
        if group is None and group_index is not None and len(args) > group_index:
            group = args[group_index]
        group_name = _group_name(group)
        seq = state.group_seqs.get(group_name, 0) + 1
        state.group_seqs[group_name] = seq
        frame: FrameType | None = sys._getframe(2)  # this, the wrapper, then the caller
        for _ in range(_USER_FRAMES_SEARCHED):
            if frame is None or _user_code(frame.f_code):
                break
            frame = frame.f_back
        file = function = None
        line = 0
        callers: tuple[Place, ...] = ()
        if frame is not None and _user_code(frame.f_code):
            file, line, function = frame.f_code.co_filename, frame.f_lineno, frame.f_code.co_name
            callers = _user_callers(frame.f_back)
        state.collective_calls.append((group_name, seq, name, _input_sizes(args, kwargs),
                                       file, line, function or "", callers))
        if file is not None and function is not None:
            key = (group_name, name, file, line, function, callers)
            counts = state.collective_sites.get(key)
            if counts is not None:
                counts[0] += 1
                counts[2] = seq
            elif len(state.collective_sites) < _SITES:
                state.collective_sites[key] = [1, seq, seq]
    except Exception:
        pass


def _enter_collective(
    name: str, args: tuple[object, ...], kwargs: dict[str, object], async_index: int | None
) -> int | None:
    """Count the call; for a blocking one, record that it runs and return its number."""
    try:
        state = _status
        state.collectives += 1
        seq = state.collectives
        if async_index is not None:
            asynchronous = kwargs.get("async_op", False)
            if len(args) > async_index:
                asynchronous = args[async_index]
            if asynchronous:
                state.last_collective = name
                _changed()
                return None
        state.in_collective = name
        state.in_collective_seq = seq
        state.in_collective_since = _now()
        _note_sync_site_from_collective()
        _changed()
        return seq
    except Exception:
        return None


def _exit_collective(name: str, seq: int) -> None:
    try:
        state = _status
        if state.in_collective_seq == seq:
            state.in_collective = None
            state.in_collective_seq = None
            state.in_collective_since = None
        state.last_collective = name
        _changed()
    except Exception:
        pass


def count_nonfinite_loss() -> None:
    """One more NaN/Inf loss seen (strict JSON has no NaN: `nonfinite_losses` says it)."""
    state = _status
    state.losses_seen += 1
    state.last_loss = None
    state.nonfinite_losses += 1
    state.last_nonfinite_at = _now()


def hook_backward(torch: ModuleType) -> None:
    tensor_type = torch.Tensor
    original = tensor_type.backward
    if shared.is_wrapper(original):
        return

    @functools.wraps(original)
    def backward(self: Tensor, *args: object, **kwargs: object) -> object:
        # Traced by torch.compile, or a tensor subclass's __torch_function__ calling backward
        # again: pass through (the loss is counted once, and never inside a graph).
        if getattr(probe.tls, "in_backward", False) or (
                probe.compiling is not None and probe.compiling()):
            return original(self, *args, **kwargs)
        _note_loss(self, tensor_type)
        _note_sync_site()
        probe.tls.in_backward = True
        try:
            return original(self, *args, **kwargs)
        except BaseException as error:
            _hide_wrapper_frame(error)
            raise
        finally:
            probe.tls.in_backward = False

    shared.mark_wrapper(backward)
    tensor_type.backward = backward


_SYNC_FRAMES = 8


def _note_sync_site() -> None:
    """Where the job's code stands when it calls a collective or backward() (DDP all-reduces
    there): (file, line, function) of its callers, innermost first. A rank that leaves the job
    early leaves no stack; this says in which loop it last synchronised, and the loop's exits
    say how it could have left. Plain values only: a frame kept would keep its locals alive."""
    _note_sync_site_at(3)


def _note_sync_site_at(depth: int) -> None:
    try:
        frame: FrameType | None = sys._getframe(depth)
        chain: list[tuple[types.CodeType, int]] = []  # names are read when written out
        for _ in range(_SYNC_FRAMES):
            if frame is None:
                break
            chain.append((frame.f_code, frame.f_lineno))
            frame = frame.f_back
        _status.last_sync_at = chain
    except Exception:
        pass


def _note_sync_site_from_collective() -> None:
    """`_note_sync_site` from `_enter_collective`, one frame deeper than the backward hook."""
    _note_sync_site_at(4)


def _note_loss(loss: Tensor, tensor_type: type[Tensor]) -> None:
    """Read the loss where that costs no sync: a plain CPU scalar at once, a scalar on a CUDA
    device later, through an asynchronous copy (`DeviceLosses`). A tensor subclass (DTensor,
    fake tensors) may do anything when read: it is only counted."""
    try:
        state = _status
        plain = (type(loss) is tensor_type and loss.dtype.is_floating_point
                 and loss.numel() == 1)
        if plain and loss.is_cuda:
            state.device_losses.add(loss)  # counted when its value reaches the host
            return
        value = float(loss.item()) if plain and loss.is_cpu else None
        if value is None:
            state.losses_seen += 1
        elif math.isfinite(value):
            state.losses_seen += 1
            state.last_loss = value
            state.nonfinite_unbacked = 0
        elif state.nonfinite_unbacked > 0:
            state.nonfinite_unbacked -= 1  # counted where the loss function returned it
        else:
            count_nonfinite_loss()
        _changed()
    except Exception:
        pass

