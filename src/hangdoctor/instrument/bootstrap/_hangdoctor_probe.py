"""hangdoctor's in-process probe: counts training progress and writes it to a status file.

Loaded by our `sitecustomize` once `torch` is imported, in the job's own interpreter (any
Python >= 3.8, hangdoctor not importable): stdlib and torch only. The hooks only count and
timestamp, never touch the job's tensors beyond reading a CPU loss, and swallow their own
errors: watching the job must never change or break it. A daemon thread writes
`status-<pid>.json` (the fields of hangdoctor's `ProgressStatus`) atomically, at most every
0.5 s and only when something changed, for the supervisor that polls the folder.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import json
import math
import os
import sys
import threading
import time
from typing import IO, TYPE_CHECKING

if TYPE_CHECKING:  # torch is only imported by the job itself
    from collections.abc import Callable
    from types import ModuleType

    from torch import Tensor
    from torch.optim import Optimizer

STATUS_DIR_ENV = "HANGDOCTOR_STATUS_DIR"
WRITE_INTERVAL_S = 0.5
COLLECTIVES = (
    "all_reduce", "all_gather", "all_gather_into_tensor", "all_gather_object", "reduce_scatter",
    "reduce_scatter_tensor", "broadcast", "broadcast_object_list", "reduce", "barrier",
    "all_to_all", "all_to_all_single", "gather", "scatter", "monitored_barrier",
    "all_gather_single", "reduce_scatter_single",  # torch 2.13's names (FSDP2 uses them)
)
_MARK = "_hangdoctor_wrapped"


class _Status:
    """This process's progress; the field names are those of `ProgressStatus`."""

    __slots__ = (
        "batches", "collectives", "data_ends", "data_wait_s", "in_collective", "in_collective_seq",
        "in_collective_since", "last_batch_at", "last_collective", "last_loss",
        "last_nonfinite_at", "last_step_at", "losses_seen", "nonfinite_losses", "pid", "rank",
        "steps", "version", "world_size",
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

    def as_json(self) -> str:
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
            "losses_seen": self.losses_seen,
            "last_loss": self.last_loss,
            "nonfinite_losses": self.nonfinite_losses,
            "last_nonfinite_at": self.last_nonfinite_at,
        }, allow_nan=False)


_state = _Status()
_armed = False
_directory: str | None = None
_dist: ModuleType | None = None  # torch.distributed, once armed, for the rank when RANK is not set
_compiling: Callable[[], bool] | None = None  # torch.compiler.is_compiling, when torch has it
_tls = threading.local()  # per thread: inside a wrapped collective or backward already
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
    for install in (_hook_optimizer, _hook_dataloader, _hook_distributed, _hook_backward):
        with contextlib.suppress(Exception):
            install(torch)
    _log_fatal_signals()
    _register_stack_dump()
    try:
        os.register_at_fork(after_in_child=_after_fork_in_child)
        atexit.register(_flush)
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
        path = os.path.join(_directory, f"fault-{os.getpid()}.txt")
        _fault_file = _private_open(path)  # kept open: must outlive this call
        faulthandler.enable(file=_fault_file, all_threads=True)
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
        try:
            _state.steps += 1
            _state.last_step_at = _now()
            _changed()
        except Exception:
            pass

    optimizer.register_optimizer_step_post_hook(on_step)


def _hook_dataloader(torch: ModuleType) -> None:
    from torch.utils.data.dataloader import _BaseDataLoaderIter as base

    original = base.__next__
    if getattr(original, _MARK, False):
        return
    clock = time.perf_counter

    @functools.wraps(original)
    def __next__(self: base) -> object:
        started = clock()
        try:
            batch = original(self)
        except StopIteration:
            _note_wait(started, clock, got_batch=False, ran_out=True)
            raise
        except BaseException:
            _note_wait(started, clock, got_batch=False)
            raise
        _note_wait(started, clock, got_batch=True)
        return batch

    setattr(__next__, _MARK, True)
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
    global _dist, _compiling
    import torch.distributed as dist

    if not dist.is_available():
        return
    import torch.distributed.distributed_c10d as c10d

    _dist = dist
    compiler = getattr(torch, "compiler", None)
    _compiling = getattr(compiler, "is_compiling", None)
    wrappers: dict[int, object] = {}
    for module in (dist, c10d):
        for name in COLLECTIVES:
            try:
                function = getattr(module, name, None)
                if function is None or getattr(function, _MARK, False):
                    continue
                if id(function) not in wrappers:
                    wrappers[id(function)] = _wrap_collective(name, function)
                setattr(module, name, wrappers[id(function)])
            except Exception:
                pass


def _async_op_index(function: Callable[..., object]) -> int | None:
    """Position of the `async_op` parameter, to tell async calls from blocking ones."""
    import inspect

    try:
        names = list(inspect.signature(function).parameters)
        return names.index("async_op")
    except (ValueError, TypeError):
        return None


def _wrap_collective(name: str, function: Callable[..., object]) -> Callable[..., object]:
    async_index = _async_op_index(function)

    @functools.wraps(function)
    def collective(*args: object, **kwargs: object) -> object:
        # Nested (all_gather_object calls all_gather) or traced by torch.compile: pass through,
        # so one user call counts once and the compiler sees the function it knows.
        if getattr(_tls, "in_collective", False) or (_compiling is not None and _compiling()):
            return function(*args, **kwargs)
        seq = _enter_collective(name, args, kwargs, async_index)
        _tls.in_collective = True
        try:
            return function(*args, **kwargs)
        finally:
            _tls.in_collective = False
            if seq is not None:
                _exit_collective(name, seq)

    setattr(collective, _MARK, True)
    return collective


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
        # A tensor subclass's __torch_function__ calls backward again: count the loss once.
        if getattr(_tls, "in_backward", False):
            return original(self, *args, **kwargs)
        _note_loss(self, tensor_type)
        _tls.in_backward = True
        try:
            return original(self, *args, **kwargs)
        finally:
            _tls.in_backward = False

    setattr(backward, _MARK, True)
    tensor_type.backward = backward


def _note_loss(loss: Tensor, tensor_type: type[Tensor]) -> None:
    """Read the loss only where that is free: a plain CPU scalar. A GPU loss would need a device
    sync, and a tensor subclass (DTensor, fake tensors) may do anything on .item()."""
    try:
        state = _state
        state.losses_seen += 1
        if (type(loss) is tensor_type and loss.is_cpu and loss.dtype.is_floating_point
                and loss.numel() == 1):
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
        _flush()
        _answer_flight_recorder_request()
        _write_thread_map()
        time.sleep(WRITE_INTERVAL_S)


# ---- PyTorch's Flight Recorder, on request ------------------------------------------------------

FLIGHT_RECORDER_REQUEST = "flight-recorder.request"
_answered_request: int | None = None


def _answer_flight_recorder_request() -> None:
    """When the supervisor declares a hang it drops a request file; every rank then writes its
    Flight Recorder ring buffer (the last collectives with their sequence numbers) as
    `fr-<pid>.json`. This runs in the writer thread, which gets the GIL even while the main
    thread is blocked inside a collective (torch releases it there)."""
    global _answered_request
    if _directory is None:
        return
    try:
        request = os.path.join(_directory, FLIGHT_RECORDER_REQUEST)
        if not os.path.exists(request):
            return
        stamp = os.stat(request).st_mtime_ns
        if stamp == _answered_request or _dist is None or not _dist.is_initialized():
            return
        _answered_request = stamp
        dump = getattr(sys.modules["torch"]._C._distributed_c10d, "_dump_fr_trace_json", None)
        if dump is None:
            return
        trace = json.loads(dump(True, True))
        pid = os.getpid()
        body = json.dumps({"pid": pid, "rank": _rank(), "trace": trace})
        temporary = os.path.join(_directory, f".fr-{pid}.json.tmp")
        with _private_open(temporary) as handle:
            handle.write(body)
        os.replace(temporary, os.path.join(_directory, f"fr-{pid}.json"))
    except Exception:
        pass


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
            pid = _state.pid
            path = os.path.join(_directory, f"status-{pid}.json")
            temporary = os.path.join(_directory, f".status-{pid}.json.tmp")
            with _private_open(temporary) as handle:
                handle.write(_state.as_json())
            os.replace(temporary, path)
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
STACK_SIGNAL_OFFSET = 6  # SIGRTMIN + 6: a real-time signal no common library uses
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
        stack_file = open(os.path.join(_directory, f"stacks-{pid}.txt"), "ab")  # noqa: SIM115
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
        temporary = os.path.join(_directory, f".threads-{pid}.json.tmp")
        with _private_open(temporary) as handle:
            handle.write(body)
        os.replace(temporary, os.path.join(_directory, f"threads-{pid}.json"))
        _thread_map_written = threads
    except Exception:
        pass
