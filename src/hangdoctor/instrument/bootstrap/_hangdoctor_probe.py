"""hangdoctor's in-process probe: counts training progress and writes it to a status file.

Loaded by our `sitecustomize` once `torch` is imported, in the job's own interpreter (any
Python >= 3.8, hangdoctor not importable): stdlib and torch only. The hooks only count and
timestamp, never change the job's tensors (they read losses: a CPU loss at once, a GPU loss
through an asynchronous copy, never a device sync), and swallow their own errors: watching the
job must never change or break it. A daemon thread writes `status-<pid>.json` (the fields of
hangdoctor's `ProgressStatus`) atomically, at most every 0.5 s and only when something changed,
for the supervisor that polls the folder.

Invisible to the job: an exception raised through a wrapper leaves no frame of ours in the
user's traceback (Python >= 3.11), and torch.compile neither traces nor breaks its graphs on our
code (our frames are skipped when Dynamo meets them, a step counted inside a compiled region is
counted after its graph).
"""

from __future__ import annotations

import atexit
import collections
import contextlib
import functools
import json
import math
import os
import sys
import threading
import time
import types
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:  # torch is only imported by the job itself
    from collections.abc import Callable
    from types import FrameType, ModuleType

    from torch import Tensor
    from torch.optim import Optimizer



def _sibling(name: str) -> types.ModuleType:
    """A module of this folder, loaded from beside this file (sys.path may have changed, and
    this file may run under another name)."""
    module = sys.modules.get(name)
    if module is None:
        import importlib.util

        path = os.path.join(os.path.dirname(os.path.abspath(__file__)), name + ".py")
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise ImportError(name)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        sys.modules[name] = module
    return module


if TYPE_CHECKING:
    from hangdoctor.instrument.bootstrap import _hangdoctor_protocol as protocol
else:
    protocol = _sibling("_hangdoctor_protocol")

STATUS_DIR_ENV = protocol.STATUS_DIR_ENV
WRITE_INTERVAL_S = 0.5
COLLECTIVES = protocol.COLLECTIVES
_MARK = "_hangdoctor_wrapped"


class _DeviceLosses:
    """GPU losses checked for NaN/Inf without a device sync.

    Per step the training thread only keeps the loss (detached: no graph, a few bytes on the
    device). About every `FLUSH_EVERY_S` it stacks the kept losses into one tensor, copies it
    asynchronously into pinned host memory, then copies a sequence number behind it on the same
    stream. The writer thread reads a batch once its number has arrived in host memory: plain
    memory reads, no CUDA call in that thread (one could break a CUDA graph being captured in
    another thread). Counts are the writer thread's alone, so they need no lock.
    """

    FLUSH_EVERY_S = 0.5
    MAX_KEPT = 1024  # per flush; more losses than this in FLUSH_EVERY_S flush early
    BUFFERS = 4  # batches in flight at most; when the device lags further, batches are dropped

    def __init__(self, pinned: bool = True) -> None:
        self.pinned = pinned
        self.kept: list[Tensor] = []  # training thread
        self.flushed_at = time.monotonic()
        self.free: collections.deque[tuple[Tensor, Tensor]] = collections.deque()  # unused
        # (values, n, marker, number) of each copy queued and not yet read
        self.in_flight: collections.deque[tuple[Tensor, int, Tensor, int]] = collections.deque()
        self.numbers: dict[object, Tensor] = {}  # device -> a 0-dim tensor with the number
        self.number = 0
        self.buffers_made = False
        # The writer thread's counts.
        self.seen = 0
        self.nonfinite = 0
        self.last_loss: float | None = None
        self.last_nonfinite_at: float | None = None

    def add(self, loss: Tensor) -> None:
        """Keep one loss (the training thread, inside backward)."""
        self.kept.append(loss.detach())
        if (len(self.kept) >= self.MAX_KEPT
                or time.monotonic() - self.flushed_at >= self.FLUSH_EVERY_S):
            self.flush()

    def flush(self) -> None:
        """Queue the copy of the kept losses to host memory (the training thread)."""
        kept, self.kept = self.kept, []
        self.flushed_at = time.monotonic()
        torch = sys.modules["torch"]
        if not kept or (self.pinned and torch.cuda.is_current_stream_capturing()):
            return  # nothing kept, or inside a CUDA graph capture: no copy may be queued
        if not self.buffers_made:
            self.buffers_made = True
            for _ in range(self.BUFFERS):
                self.free.append((torch.empty(self.MAX_KEPT, pin_memory=self.pinned),
                                  torch.full((1,), -1, dtype=torch.int64,
                                             pin_memory=self.pinned)))
        by_device: dict[object, list[Tensor]] = {}
        for loss in kept:
            by_device.setdefault(loss.device, []).append(loss)
        for device, losses in by_device.items():
            if not self.free:
                return  # the device lags too far behind: these losses go uncounted
            values, marker = self.free.popleft()
            try:
                try:
                    stacked = torch.stack(losses)
                except RuntimeError:  # shapes () and (1,), or dtypes, mixed
                    stacked = torch.stack([loss.reshape(()).float() for loss in losses])
                count = min(len(losses), self.MAX_KEPT)
                values[:count].copy_(stacked.reshape(-1)[:count], non_blocking=True)
                self.number += 1
                number = self.numbers.get(device)
                if number is None:
                    number = self.numbers[device] = torch.zeros((1,), dtype=torch.int64,
                                                                device=device)
                number.fill_(self.number)
                marker.copy_(number, non_blocking=True)  # stream order: after the values
                self.in_flight.append((values, count, marker, self.number))
            except Exception:
                self.free.append((values, marker))
                raise

    def collect(self) -> bool:
        """Count the batches whose copy has arrived (the writer thread); True if any did."""
        counted = False
        while self.in_flight:
            values, count, marker, number = self.in_flight[0]
            if int(marker[0]) != number:
                break  # still on its way
            self.in_flight.popleft()
            numbers = values[:count].tolist()
            self.free.append((values, marker))
            finite = [v for v in numbers if math.isfinite(v)]
            self.seen += count
            if finite:
                self.last_loss = finite[-1]
            if len(finite) < count:
                self.nonfinite += count - len(finite)
                self.last_nonfinite_at = time.time()
            if numbers and not math.isfinite(numbers[-1]):
                self.last_loss = None
            counted = True
        return counted


class _Status:
    """This process's progress; the field names are those of `ProgressStatus`."""

    __slots__ = (
        "batches",
        "collective_calls",
        "collective_sites",
        "collectives",
        "data_ends",
        "data_wait_s",
        "device_losses",
        "exiting_at",
        "group_seqs",
        "group_sites",
        "groups_created",
        "in_collective",
        "in_collective_seq",
        "in_collective_since",
        "last_batch_at",
        "last_collective",
        "last_loss",
        "last_nonfinite_at",
        "last_step_at",
        "last_sync_at",
        "losses_seen",
        "nonfinite_losses",
        "pid",
        "rank",
        "steps",
        "version",
        "world_size",
    )

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.pid = os.getpid()
        self.version = 0  # bumped on every change; the writer compares it with what it wrote
        self.steps = 0
        self.last_step_at: float | None = None
        self.batches = 0
        self.last_batch_at: float | None = None
        self.data_wait_s = 0.0
        self.data_ends = 0  # DataLoader iterators that ran out (an epoch's data is done)
        self.collectives = 0
        self.last_collective: str | None = None
        self.in_collective: str | None = None
        self.in_collective_seq: int | None = None
        self.in_collective_since: float | None = None
        self.losses_seen = 0
        self.last_loss: float | None = None
        self.nonfinite_losses = 0
        self.last_nonfinite_at: float | None = None
        self.rank: int | None = None  # as the process group says, once it exists
        self.world_size: int | None = None
        self.device_losses = _DeviceLosses()  # GPU losses, counted by the writer thread
        self.exiting_at: float | None = None  # when the interpreter began to exit normally
        self.last_sync_at: list[tuple[types.CodeType, int]] = []  # see _note_sync_site
        self.groups_created = 0  # torch.distributed.new_group calls (see _wrap_new_group)
        self.group_sites: list[tuple[int, str, int, str]] = []  # (number, file, line, function)
        # See _note_collective_call: the recent calls, the calls per site, the numbers per group.
        self.collective_calls: collections.deque[_Call] = collections.deque(maxlen=_CALLS)
        self.collective_sites: dict[_SiteKey, list[int]] = {}
        self.group_seqs: dict[str, int] = {}

    def as_json(self) -> str:
        device = self.device_losses
        last_nonfinite = max((t for t in (self.last_nonfinite_at, device.last_nonfinite_at)
                              if t is not None), default=None)
        return json.dumps({
            "pid": self.pid,
            "rank": self.rank if self.rank is not None else _env_int("RANK"),
            "world_size": self.world_size,  # only as the process group says it
            "updated_at": time.time(),
            "steps": self.steps,
            "last_step_at": self.last_step_at,
            "batches": self.batches,
            "last_batch_at": self.last_batch_at,
            "data_wait_s": self.data_wait_s,
            "data_ends": self.data_ends,
            "collectives": self.collectives,
            "last_collective": self.last_collective,
            "in_collective": self.in_collective,
            "in_collective_seq": self.in_collective_seq,
            "in_collective_since": self.in_collective_since,
            "losses_seen": self.losses_seen + device.seen,
            "last_loss": device.last_loss if device.seen else self.last_loss,
            "nonfinite_losses": self.nonfinite_losses + device.nonfinite,
            "last_nonfinite_at": last_nonfinite,
            "exiting_at": self.exiting_at,
            "limits": _limits(),
            "last_sync_at": [(code.co_filename, line, code.co_name)
                             for code, line in self.last_sync_at],
            "groups_created": self.groups_created,
            "group_sites": self.group_sites,
            "collective_calls": [_call_json(call) for call in list(self.collective_calls)],
            "collective_sites": [_site_json(key, counts)
                                 for key, counts in list(self.collective_sites.items())],
        }, allow_nan=False)


if TYPE_CHECKING:  # aliases for annotations only: Python 3.8 cannot subscript `tuple`
    # (group, seq, op, sizes, file, line, function) of one collective call; file is None when
    # no frame of the user's code made it.
    _Place = tuple[str, int, str]  # file, line, function
    # ... and the user's frames further out that led there (the caller of a shared helper).
    _Call = tuple[str, int, str, str | None, str | None, int, str, tuple[_Place, ...]]
    _SiteKey = tuple[str, str, str, int, str, tuple[_Place, ...]]  # group, op, place, callers
_CALLS = 64  # the most recent collective calls kept
_SITES = 64  # the distinct call sites counted


def _places_json(places: tuple[_Place, ...]) -> list[dict[str, object]]:
    return [{"file": file, "line": line, "function": function} for file, line, function in places]


# The limits a process can set on itself (`resource.setrlimit` in the script) that make a
# write, an open or an allocation fail: what /proc shows no more once the process is gone.
_LIMITS = (("file_size", "RLIMIT_FSIZE"), ("open_files", "RLIMIT_NOFILE"),
           ("address_space", "RLIMIT_AS"), ("processes", "RLIMIT_NPROC"))


def _limits() -> dict[str, int]:
    """The process's finite soft limits, by name (an unlimited one is left out)."""
    try:
        import resource
    except ImportError:  # not on this platform
        return {}
    found: dict[str, int] = {}
    for name, which in _LIMITS:
        try:
            soft = resource.getrlimit(getattr(resource, which))[0]
        except (AttributeError, OSError, ValueError):
            continue
        if soft != resource.RLIM_INFINITY:
            found[name] = soft
    return found


def _call_json(call: _Call) -> dict[str, object]:
    group, seq, op, sizes, file, line, function, callers = call
    site = {"file": file, "line": line, "function": function} if file is not None else None
    return {"group": group, "seq": seq, "op": op, "sizes": sizes, "site": site,
            "callers": _places_json(callers)}


def _site_json(key: _SiteKey, counts: list[int]) -> dict[str, object]:
    group, op, file, line, function, callers = key
    calls, first, last = counts
    return {"group": group, "op": op, "site": {"file": file, "line": line, "function": function},
            "callers": _places_json(callers), "calls": calls, "first_seq": first,
            "last_seq": last}


_state = _Status()
_armed = False
_directory: str | None = None
_dist: ModuleType | None = None  # torch.distributed, once armed, for the rank when RANK is not set
_compiling: Callable[[], bool] | None = None  # torch.compiler.is_compiling, when torch has it
_tls = threading.local()  # per thread: inside a wrapped collective or backward already
_WRAPPERS: set[types.CodeType] = set()  # code of the functions that stand in for torch's
# Writer state; reset in a forked child, where the parent's thread does not exist.
_writer_started = False
_write_lock = threading.Lock()
_written = -1
_disabled = False


def arm() -> None:
    """Install the hooks into the imported torch and start reporting. Idempotent."""
    global _armed, _directory
    torch = sys.modules.get("torch")
    directory = os.environ.get(STATUS_DIR_ENV)
    if _armed or torch is None or not directory:
        return
    _armed = True
    _directory = os.path.abspath(directory)
    global _compiling
    _compiling = getattr(getattr(torch, "compiler", None), "is_compiling", None)
    for install in (_hook_optimizer, _hook_dataloader, _hook_distributed, _hook_backward):
        with contextlib.suppress(Exception):
            install(torch)
    _log_fatal_signals()
    _log_stop_signal()
    _log_thread_deaths()
    _register_stack_dump()
    if "torch._dynamo" in sys.modules:
        dynamo_loaded()
    try:
        os.register_at_fork(after_in_child=_after_fork_in_child)
        atexit.register(_at_exit)
        _changed()  # write once now: the supervisor sees which processes are instrumented
    except Exception:
        pass


_fault_file: IO[str] | None = None  # kept open: faulthandler writes to it as the process dies


def _log_fatal_signals() -> None:
    """Where a process dies of SIGSEGV, SIGBUS, SIGABRT, SIGFPE or SIGILL, Python's faulthandler
    writes every thread's stack to `fault-<pid>.txt` in the status folder (not the job's
    output), then the signal takes its course as before. Left alone when the job (or
    PYTHONFAULTHANDLER) enabled faulthandler itself."""
    global _fault_file
    try:
        import faulthandler

        if _directory is None or (faulthandler.is_enabled() and _fault_file is None):
            return
        path = os.path.join(_directory, protocol.fault_file(os.getpid()))
        _fault_file = _private_open(path)  # kept open: must outlive this call
        faulthandler.enable(file=_fault_file, all_threads=True)
    except Exception:
        pass


_stop_file: IO[str] | None = None  # kept open: faulthandler writes to it when SIGTERM comes


def _log_stop_signal() -> None:
    """When one rank fails (a collective timeout, an exception), torchrun and mp.spawn end the
    others with SIGTERM, and where those were at that moment is often the answer: the slow
    evaluation the failed rank gave up waiting for. Nothing else records it, so faulthandler
    writes every thread's stack to `stopped-<pid>.txt` and then chains to the handler that was
    there before: the process ends, or handles SIGTERM, exactly as it would have. A handler the
    job installs later with `signal.signal` replaces this one, and that is fine too."""
    global _stop_file
    try:
        import faulthandler
        import signal

        if _directory is None or not hasattr(faulthandler, "register"):
            return
        stop_file = _private_open(os.path.join(_directory, protocol.stopped_file(os.getpid())))
        faulthandler.register(signal.SIGTERM, file=stop_file, all_threads=True, chain=True)
        _stop_file = stop_file  # a forked child's replaces the parent's (closed when dropped)
    except Exception:
        pass


_DEATH_BYTES = 64 * 1024  # of one traceback, at most


def _log_thread_deaths() -> None:
    """A thread that dies of an exception (a prefetching thread that met a bad record) leaves a
    consumer waiting for it forever, and its traceback is the answer; but threading prints it
    to stderr line by line, and the job's stdout, which shares the log, lands between those
    lines. So `threading.excepthook` is wrapped: the hook that was there (threading's own, or
    the job's) runs exactly as before, after the traceback is appended whole to
    `died-<pid>.txt`. A hook the job installs later replaces this one, and that is fine too."""
    try:
        previous = threading.excepthook
        if getattr(previous, _MARK, False):
            return

        def excepthook(args: threading.ExceptHookArgs) -> None:
            _note_thread_death(args)
            previous(args)

        setattr(excepthook, _MARK, True)
        _WRAPPERS.add(_code_of(excepthook))
        threading.excepthook = excepthook
    except Exception:
        pass


def _note_thread_death(args: threading.ExceptHookArgs) -> None:
    """Write the dead thread's traceback as threading prints it (its header names the thread),
    in one write, into this process's file (a forked child has its own pid, hence its own)."""
    try:
        if _directory is None or args.exc_type is SystemExit:  # threading is silent on it too
            return
        import traceback

        name = args.thread.name if args.thread is not None else "unknown"
        text = f"Exception in thread {name}:\n" + "".join(traceback.format_exception(
            args.exc_type, args.exc_value, args.exc_traceback))
        data = text.encode("utf-8", errors="replace")[-_DEATH_BYTES:]
        path = os.path.join(_directory, protocol.died_file(os.getpid()))
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, _FILE_MODE)
        try:
            os.write(descriptor, data)
        finally:
            os.close(descriptor)
    except Exception:
        pass


def dynamo_loaded() -> None:
    """torch._dynamo was just imported (torch.compile): keep the compiler off our code.

    Dynamo compiles every Python frame that runs while a compiled function executes, so our
    wrappers, met after a graph break (`loss.backward()` is one), would be traced and our own
    `.item()` would break a graph of ours and warn. Every code object of this module is marked
    to be skipped: it then runs as plain Python. A step counted while Dynamo traces an
    optimizer step is deferred to after the graph (a reorderable call), not a graph break.
    """
    try:
        eval_frame = sys.modules.get("torch._dynamo.eval_frame")
        skip = getattr(eval_frame, "skip_code", None)
        if skip is not None:
            for code in _own_code():
                skip(code)
        config = sys.modules.get("torch._dynamo.config")
        reorderable = getattr(config, "reorderable_logging_functions", None)
        if isinstance(reorderable, set):
            reorderable.add(_count_step)
    except Exception:
        pass


def _code_of(function: object) -> types.CodeType:
    """A wrapper's own code object (functools.wraps hides its type from the type checker)."""
    code: types.CodeType = getattr(function, "__code__")  # noqa: B009
    return code


def _own_code() -> list[types.CodeType]:
    """Every code object defined in this module, nested functions included."""
    found: list[types.CodeType] = []
    pending = [value.__code__ for value in list(globals().values())
               if isinstance(value, types.FunctionType) and value.__module__ == __name__]
    for value in list(globals().values()):
        if isinstance(value, type) and value.__module__ == __name__:
            pending += [member.__code__ for member in vars(value).values()
                        if isinstance(member, types.FunctionType)]
    while pending:
        code = pending.pop()
        found.append(code)
        pending += [c for c in code.co_consts if isinstance(c, types.CodeType)]
    return found


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


def _changed() -> None:
    """Note a change; the first one in a process starts its writer."""
    _state.version += 1
    if not _writer_started:
        _start_writer()


def _now() -> float:
    return time.time()


# ---- the hooks --------------------------------------------------------------------------------


def _hook_optimizer(torch: ModuleType) -> None:
    import torch.optim.optimizer as optimizer

    def on_step(opt: Optimizer, args: tuple[object, ...], kwargs: dict[str, object]) -> None:
        _count_step()  # nothing else: torch.compile may trace this hook

    optimizer.register_optimizer_step_post_hook(on_step)


def _count_step() -> None:
    """One optimizer step taken."""
    try:
        _state.steps += 1
        _state.last_step_at = _now()
        _changed()
    except Exception:
        pass


def _hook_dataloader(torch: ModuleType) -> None:
    from torch.utils.data.dataloader import _BaseDataLoaderIter as base

    original = base.__next__
    if getattr(original, _MARK, False):
        return
    clock = time.perf_counter

    @functools.wraps(original)
    def __next__(self: base) -> object:
        if _compiling is not None and _compiling():
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

    setattr(__next__, _MARK, True)
    _WRAPPERS.add(_code_of(__next__))
    base.__next__ = __next__  # type: ignore[method-assign]  # patching torch is the point


def _note_wait(started: float, clock: Callable[[], float], got_batch: bool,
               ran_out: bool = False) -> None:
    try:
        _state.data_wait_s += clock() - started
        if ran_out:
            _state.data_ends += 1
        if got_batch:
            _state.batches += 1
            _state.last_batch_at = _now()
        _changed()
    except Exception:
        pass


def _hook_distributed(torch: ModuleType) -> None:
    """Wrap the collectives on `torch.distributed` and `distributed_c10d` (one wrapper per
    function, so that both names stay the same object, as they were)."""
    global _dist
    import torch.distributed as dist

    if not dist.is_available():
        return
    import torch.distributed.distributed_c10d as c10d

    _dist = dist
    _learn_library_dirs(torch)
    wrappers: dict[int, object] = {}
    for module in (dist, c10d):
        for name in (*COLLECTIVES, "new_group"):
            try:
                function = getattr(module, name, None)
                if function is None or getattr(function, _MARK, False):
                    continue
                if id(function) not in wrappers:
                    wrappers[id(function)] = (_wrap_new_group(function) if name == "new_group"
                                              else _wrap_collective(name, function))
                setattr(module, name, wrappers[id(function)])
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

    setattr(new_group, _MARK, True)
    _WRAPPERS.add(_code_of(new_group))
    return new_group


def _note_group_creation() -> None:
    try:
        state = _state
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
        if getattr(_tls, "in_collective", False) or (_compiling is not None and _compiling()):
            return function(*args, **kwargs)
        _note_collective_call(name, args, kwargs, group_index)
        seq = _enter_collective(name, args, kwargs, async_index)
        _tls.in_collective = True
        try:
            return function(*args, **kwargs)
        except BaseException as error:
            _hide_wrapper_frame(error)
            raise
        finally:
            _tls.in_collective = False
            if seq is not None:
                _exit_collective(name, seq)

    setattr(collective, _MARK, True)
    _WRAPPERS.add(_code_of(collective))
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


def _user_callers(frame: FrameType | None) -> tuple[_Place, ...]:
    """The next user frames outward (at most _CALLERS): two metrics that gather through one
    helper function are told apart by who called the helper."""
    found: list[_Place] = []
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
        state = _state
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
        callers: tuple[_Place, ...] = ()
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
        state = _state
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
        state = _state
        if state.in_collective_seq == seq:
            state.in_collective = None
            state.in_collective_seq = None
            state.in_collective_since = None
        state.last_collective = name
        _changed()
    except Exception:
        pass


def _hook_backward(torch: ModuleType) -> None:
    tensor_type = torch.Tensor
    original = tensor_type.backward
    if getattr(original, _MARK, False):
        return

    @functools.wraps(original)
    def backward(self: Tensor, *args: object, **kwargs: object) -> object:
        # Traced by torch.compile, or a tensor subclass's __torch_function__ calling backward
        # again: pass through (the loss is counted once, and never inside a graph).
        if getattr(_tls, "in_backward", False) or (_compiling is not None and _compiling()):
            return original(self, *args, **kwargs)
        _note_loss(self, tensor_type)
        _note_sync_site()
        _tls.in_backward = True
        try:
            return original(self, *args, **kwargs)
        except BaseException as error:
            _hide_wrapper_frame(error)
            raise
        finally:
            _tls.in_backward = False

    setattr(backward, _MARK, True)
    _WRAPPERS.add(_code_of(backward))
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
        _state.last_sync_at = chain
    except Exception:
        pass


def _note_sync_site_from_collective() -> None:
    """`_note_sync_site` from `_enter_collective`, one frame deeper than the backward hook."""
    _note_sync_site_at(4)


def _note_loss(loss: Tensor, tensor_type: type[Tensor]) -> None:
    """Read the loss where that costs no sync: a plain CPU scalar at once, a scalar on a CUDA
    device later, through an asynchronous copy (`_DeviceLosses`). A tensor subclass (DTensor,
    fake tensors) may do anything when read: it is only counted."""
    try:
        state = _state
        plain = (type(loss) is tensor_type and loss.dtype.is_floating_point
                 and loss.numel() == 1)
        if plain and loss.is_cuda:
            state.device_losses.add(loss)  # counted when its value reaches the host
            return
        state.losses_seen += 1
        if plain and loss.is_cpu:
            value = float(loss.item())
            if math.isfinite(value):
                state.last_loss = value
            else:
                state.last_loss = None  # strict JSON has no NaN; nonfinite_losses says it
                state.nonfinite_losses += 1
                state.last_nonfinite_at = _now()
        _changed()
    except Exception:
        pass


def _env_int(name: str) -> int | None:
    value = os.environ.get(name, "")
    return int(value) if value.isdigit() else None


def _rank() -> int | None:
    return _state.rank if _state.rank is not None else _env_int("RANK")


def _learn_identity() -> None:
    """Read the rank and world size from the process group once it exists: however the job was
    launched (mp.spawn, Lightning, `--rank` on a command line), the process then knows them."""
    try:
        if _state.rank is None and _dist is not None and _dist.is_initialized():
            _state.rank = int(_dist.get_rank())
            _state.world_size = int(_dist.get_world_size())
            _changed()
    except Exception:
        pass


# ---- the writer -------------------------------------------------------------------------------

# Report files are the owner's only, unless the user asked hangdoctor for shared reports.
_FILE_MODE = 0o644 if os.environ.get("HANGDOCTOR_SHARED_REPORTS", "") not in ("", "0") else 0o600


def _private_open(path: str) -> IO[str]:
    return os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, _FILE_MODE), "w")



def _start_writer() -> None:
    global _writer_started
    if _disabled or _directory is None:
        return
    _writer_started = True
    with contextlib.suppress(Exception):
        threading.Thread(target=_write_loop, name="hangdoctor-status", daemon=True).start()


def _write_loop() -> None:
    while not _disabled:
        _learn_identity()
        _count_device_losses()
        _flush()
        _answer_flight_recorder_request()
        _answer_task_request()
        _write_thread_map()
        time.sleep(WRITE_INTERVAL_S)


def _at_exit() -> None:
    """The last counts: GPU losses whose copy has arrived, when the process exited, then the
    status file (a rank that returns early leaves no other trace of having gone first)."""
    _count_device_losses()
    try:
        _state.exiting_at = time.time()
        _changed()
    except Exception:
        pass
    _flush()


def _count_device_losses() -> None:
    try:
        if _state.device_losses.collect():
            _changed()
    except Exception:
        pass


# ---- PyTorch's Flight Recorder, on request ------------------------------------------------------

FLIGHT_RECORDER_REQUEST = protocol.REQUEST_FILE
_answered_request: int | None = None


def _request_stamp() -> int | None:
    """When the supervisor last asked (the request file's time), or None: never."""
    if _directory is None:
        return None
    request = os.path.join(_directory, FLIGHT_RECORDER_REQUEST)
    return os.stat(request).st_mtime_ns if os.path.exists(request) else None


def _write_atomically(name: str, body: str) -> None:
    """`name` in the status folder, replaced whole: a reader never sees half of it."""
    assert _directory is not None
    temporary = os.path.join(_directory, f".{name}.tmp")
    with _private_open(temporary) as handle:
        handle.write(body)
    os.replace(temporary, os.path.join(_directory, name))


def _answer_flight_recorder_request() -> None:
    """When the supervisor declares a hang it drops a request file; every rank then writes its
    Flight Recorder ring buffer (the last collectives with their sequence numbers) as
    `fr-<pid>.json`. This runs in the writer thread, which gets the GIL even while the main
    thread is blocked inside a collective (torch releases it there)."""
    global _answered_request
    if _directory is None:
        return
    try:
        stamp = _request_stamp()
        if stamp in (None, _answered_request) or _dist is None or not _dist.is_initialized():
            return
        _answered_request = stamp
        dump = getattr(sys.modules["torch"]._C._distributed_c10d, "_dump_fr_trace_json", None)
        if dump is None:
            return
        trace = json.loads(dump(True, True))
        pid = os.getpid()
        _write_atomically(protocol.flight_recorder_file(pid),
                          json.dumps({"pid": pid, "rank": _rank(), "trace": trace}))
    except Exception:
        pass


# ---- asyncio's tasks, on request -----------------------------------------------------------

_answered_tasks: int | None = None
_MAX_TASKS = 64
_MAX_DEPTH = 24


def _answer_task_request() -> None:
    """At a hang, an asyncio program's stack says only that its event loop waits in the
    selector: where each task is suspended (`await queue.get()`) and which tasks ended with an
    exception nobody retrieved live only in the process. On the supervisor's request (the same
    file as the Flight Recorder's), when a thread runs an event loop, they are written to
    `tasks-<pid>.json`. Read only: a task's exception is read from its attribute, not
    `exception()`, which would mark it retrieved and silence asyncio's own report of it."""
    global _answered_tasks
    if _directory is None or "asyncio" not in sys.modules:
        return
    try:
        stamp = _request_stamp()
        if stamp in (None, _answered_tasks):
            return
        _answered_tasks = stamp
        if not _runs_event_loop():
            return
        import gc

        future_type = sys.modules["asyncio"].Task
        tasks = [o for o in gc.get_objects() if isinstance(o, future_type)]
        pending = [t for t in tasks if not t.done()]
        failed = [t for t in tasks if t.done() and not t.cancelled()
                  and getattr(t, "_exception", None) is not None]
        body = json.dumps({"pid": os.getpid(), "tasks": [
            _task_json(t) for t in (pending[:_MAX_TASKS] + failed[:_MAX_TASKS])]})
        _write_atomically(protocol.tasks_file(os.getpid()), body)
    except Exception:
        pass


def _runs_event_loop() -> bool:
    """Whether some thread is inside an asyncio event loop's run_forever."""
    for frame in sys._current_frames().values():
        depth: FrameType | None = frame
        for _ in range(64):
            if depth is None:
                break
            code = depth.f_code
            if code.co_name == "run_forever" and code.co_filename.replace(
                    "\\", "/").endswith("asyncio/base_events.py"):
                return True
            depth = depth.f_back
    return False


def _task_json(task: Any) -> dict[str, object]:
    """A task's name, state, where it awaits (innermost first) or what it raised."""
    entry: dict[str, object] = {"name": str(task.get_name()), "done": bool(task.done())}
    if not task.done():
        chain: list[list[object]] = []
        awaited = task.get_coro()
        for _ in range(_MAX_DEPTH):
            if awaited is None:
                break
            frame = getattr(awaited, "cr_frame", None) or getattr(awaited, "gi_frame", None)
            if frame is not None:
                code = frame.f_code
                chain.append([code.co_filename, frame.f_lineno,
                              getattr(code, "co_qualname", code.co_name)])
            awaited = (getattr(awaited, "cr_await", None)
                       or getattr(awaited, "gi_yieldfrom", None))
        entry["awaiting"] = chain[::-1]
        return entry
    error = task._exception
    import traceback

    entry["exception"] = f"{type(error).__name__}: {error}"[:500]
    entry["retrieved"] = not bool(getattr(task, "_log_traceback", False))
    entry["raised"] = [[f.filename, f.lineno, f.name, f.line or ""]
                       for f in traceback.extract_tb(error.__traceback__)][::-1][:_MAX_DEPTH]
    return entry


def _flush() -> None:
    """Write the status if it changed since the last write (also at exit, for the last steps)."""
    global _written, _disabled
    if not _writer_started or _disabled or _directory is None:
        return
    try:
        with _write_lock:
            version = _state.version
            if version == _written:
                return
            _write_atomically(protocol.status_file(_state.pid), _state.as_json())
            _written = version
    except Exception:
        _disabled = True  # an unwritable folder: stop trying, the job goes on


def _after_fork_in_child() -> None:
    """A forked child (a DataLoader worker) reports for itself, from zero, and only if it makes
    progress of its own; the parent's writer thread and lock state did not survive the fork."""
    global _writer_started, _write_lock, _written, _tls
    try:
        _tls = threading.local()
        _write_lock = threading.Lock()
        _writer_started = False
        _state.reset()
        _written = _state.version
        _log_fatal_signals()  # a file of its own: a worker's crash is the worker's
        _log_stop_signal()
    except Exception:
        pass
    _register_stack_dump()


# ---- Python stacks without ptrace, on request -------------------------------------------------

# Where ptrace is refused (a container without CAP_SYS_PTRACE, Yama, a process that made itself
# undumpable), py-spy cannot read this process. Then the supervisor sends STACK_SIGNAL, and
# faulthandler, from its C signal handler (no GIL needed: it works while a thread holds the GIL in
# C code), writes every thread's stack into `stacks-<pid>.txt`. Its threads are named by
# pthread identifier; `threads-<pid>.json` maps those to the kernel's thread ids and says which
# signal to send. The supervisor sends it only to a process whose /proc/PID/status shows a
# handler for it (SigCgt): a process that does not handle it would die of it.
STACK_SIGNAL_OFFSET = protocol.STACK_SIGNAL_OFFSET  # a real-time signal no common library uses
_stack_file = None
_thread_map_written = None


def _register_stack_dump() -> None:
    global _stack_file, _thread_map_written
    try:
        import faulthandler
        import signal

        if _directory is None or not hasattr(signal, "SIGRTMIN"):
            return
        signum = signal.SIGRTMIN + STACK_SIGNAL_OFFSET
        pid = os.getpid()
        stack_file = open(os.path.join(_directory, protocol.stacks_file(pid)), "ab")  # noqa: SIM115
        os.chmod(stack_file.name, _FILE_MODE)
        faulthandler.register(signum, file=stack_file, all_threads=True, chain=False)
        previous, _stack_file = _stack_file, stack_file
        if previous is not None:  # the parent's, in a forked child
            with contextlib.suppress(Exception):
                previous.close()
        _thread_map_written = None
        _write_thread_map()
    except Exception:
        pass


def _write_thread_map() -> None:
    """`threads-<pid>.json`: the signal to send and each thread's pthread id -> kernel id,
    rewritten when the threads change."""
    global _thread_map_written
    if _stack_file is None or _directory is None:
        return
    try:
        import signal

        threads = {str(t.ident): t.native_id for t in threading.enumerate()
                   if t.ident is not None and getattr(t, "native_id", None) is not None}
        if threads == _thread_map_written:
            return
        pid = os.getpid()
        body = json.dumps({"pid": pid, "signal": int(signal.SIGRTMIN + STACK_SIGNAL_OFFSET),
                           "threads": threads})
        _write_atomically(protocol.thread_map_file(pid), body)
        _thread_map_written = threads
    except Exception:
        pass
