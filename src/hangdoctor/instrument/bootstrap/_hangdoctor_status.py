"""The probe's progress counters (`ProgressStatus`'s fields) and the JSON of the status file.

The hooks count into one `Status` (`_hangdoctor_state.status`); the writer thread turns it into
`status-<pid>.json`. GPU losses are kept by `DeviceLosses` and read without a device sync.
Stdlib only, and torch only through the losses the hooks hand in.
"""

from __future__ import annotations

import collections
import json
import math
import os
import sys
import time
import types
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # torch is only imported by the job itself
    from torch import Tensor


class DeviceLosses:
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


class Status:
    """This process's progress; the field names are those of `ProgressStatus`."""

    __slots__ = (
        "batches",
        "collective_calls",
        "collective_sites",
        "collectives",
        "compiles",
        "data_ends",
        "data_wait_s",
        "device_losses",
        "distributed_init",
        "endless_loop",
        "exit_call",
        "exit_code",
        "exit_hung",
        "exit_traceback",
        "exiting_at",
        "framework_steps",
        "frameworks",
        "group_seqs",
        "group_sites",
        "groups_created",
        "heartbeat_step",
        "heartbeats",
        "in_collective",
        "in_collective_seq",
        "in_collective_since",
        "last_batch_at",
        "last_collective",
        "last_heartbeat_at",
        "last_loss",
        "last_nonfinite_at",
        "last_step_at",
        "last_sync_at",
        "losses_seen",
        "marks",
        "nonfinite_losses",
        "nonfinite_unbacked",
        "phase_moves",
        "phases",
        "pid",
        "rank",
        "read_bytes",
        "records_exit",
        "steps",
        "version",
        "world_size",
        "write_chars",
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
        # Non-finite training losses counted where a loss function returned them and not yet
        # backpropagated (_hangdoctor_losses): backward() on one does not count it again.
        self.nonfinite_unbacked = 0
        self.rank: int | None = None  # as the process group says, once it exists
        self.world_size: int | None = None
        # This process's own /proc/self/io (bytes written by any call, read from storage), for a
        # supervisor that may not read /proc/PID/io (ptrace refused): work it does.
        self.write_chars: int | None = None
        self.read_bytes: int | None = None
        self.device_losses = DeviceLosses()  # GPU losses, counted by the writer thread
        self.exiting_at: float | None = None  # when the interpreter began to exit normally
        # How the process ends, where `watch()` records it (standalone.exit_record): its sidecar
        # names a failure from these once the process is gone.
        self.records_exit = False
        self.exit_code: int | None = None
        self.exit_traceback: str | None = None
        self.exit_hung = False  # the watchdog ended it at a hang (exit 124)
        # (file, line, function) of the job's sys.exit() in the main thread
        # (_hangdoctor_stacks.log_exit_calls)
        self.exit_call: tuple[str, int, str] | None = None
        # where the job last synchronised (_hangdoctor_hooks._note_sync_site)
        self.last_sync_at: list[tuple[types.CodeType, int]] = []
        self.groups_created = 0  # torch.distributed.new_group calls (_hangdoctor_hooks)
        self.group_sites: list[tuple[int, str, int, str]] = []  # (number, file, line, function)
        # See _hangdoctor_hooks._note_collective_call: the recent calls, the calls per site,
        # the numbers per group.
        self.collective_calls: collections.deque[Call] = collections.deque(maxlen=_CALLS)
        self.collective_sites: dict[SiteKey, list[int]] = {}
        self.group_seqs: dict[str, int] = {}
        # What the job says through the SDK (_hangdoctor_sdk): its own heartbeats, the phases
        # it is in ([name, budget_s, entered_at], outermost first), its recent marks.
        self.heartbeats = 0
        self.last_heartbeat_at: float | None = None
        self.heartbeat_step: int | None = None
        self.phase_moves = 0  # phases entered and left: the job moved on, not a training event
        self.phases: list[list[object]] = []
        self.marks: collections.deque[tuple[float, str]] = collections.deque(maxlen=MARKS_KEPT)
        # JAX and TensorFlow (_hangdoctor_jax, _hangdoctor_tf): the frameworks the process
        # imported, by name, with their versions; its steps by where they were counted
        # (`jax.jit`, `keras.train_batch`, ...), also counted in `steps`; the compilations
        # running now ([what, started_at], oldest first: a jitted function's first call, a
        # tf.function's tracing), each a phase under the compile budget.
        self.frameworks: dict[str, str] = {}
        # [process_id, num_processes, file, line, function] of the job's call of
        # jax.distributed.initialize (_hangdoctor_jax): who registered as which task, and where
        self.distributed_init: list[object] | None = None
        self.framework_steps: dict[str, int] = {}
        self.compiles: list[list[object]] = []
        # A loop of the framework that cannot end, running now (_hangdoctor_frameworks.
        # enter_endless): what, why, since, its batches (not counted in `steps`), the user's site.
        self.endless_loop: dict[str, object] | None = None

    def as_json(self) -> str:
        device = self.device_losses
        last_nonfinite = max((t for t in (self.last_nonfinite_at, device.last_nonfinite_at)
                              if t is not None), default=None)
        return json.dumps({
            "pid": self.pid,
            "rank": self.rank if self.rank is not None else env_int("RANK"),
            "world_size": self.world_size,  # as the process group says, or was asked to be
            "write_chars": self.write_chars,
            "read_bytes": self.read_bytes,
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
            "records_exit": self.records_exit,
            "exit_code": self.exit_code,
            "exit_traceback": self.exit_traceback,
            "exit_hung": self.exit_hung,
            "exit_call": self.exit_call,
            "distributed_init": self.distributed_init,
            "limits": _limits(),
            "last_sync_at": [(code.co_filename, line, code.co_name)
                             for code, line in self.last_sync_at],
            "groups_created": self.groups_created,
            "group_sites": self.group_sites,
            "collective_calls": [_call_json(call) for call in list(self.collective_calls)],
            "collective_sites": [_site_json(key, counts)
                                 for key, counts in list(self.collective_sites.items())],
            "heartbeats": self.heartbeats,
            "last_heartbeat_at": self.last_heartbeat_at,
            "heartbeat_step": self.heartbeat_step,
            "phase_moves": self.phase_moves,
            "phases": [{"name": name, "budget_s": budget, "entered_at": entered}
                       for name, budget, entered in list(self.phases)],
            "marks": [{"at": at, "text": text} for at, text in list(self.marks)],
            "frameworks": dict(self.frameworks),
            "framework_steps": dict(self.framework_steps),
            "compiling": [{"what": what, "since": since} for what, since in list(self.compiles)],
            "endless_loop": dict(self.endless_loop) if self.endless_loop else None,
        }, allow_nan=False)


if TYPE_CHECKING:  # aliases for annotations only: Python 3.8 cannot subscript `tuple`
    # (group, seq, op, sizes, file, line, function) of one collective call; file is None when
    # no frame of the user's code made it.
    Place = tuple[str, int, str]  # file, line, function
    # ... and the user's frames further out that led there (the caller of a shared helper).
    Call = tuple[str, int, str, str | None, str | None, int, str, tuple[Place, ...]]
    SiteKey = tuple[str, str, str, int, str, tuple[Place, ...]]  # group, op, place, callers
_CALLS = 64  # the most recent collective calls kept
MARKS_KEPT = 32  # the most recent marks kept


def _places_json(places: tuple[Place, ...]) -> list[dict[str, object]]:
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


def _call_json(call: Call) -> dict[str, object]:
    group, seq, op, sizes, file, line, function, callers = call
    site = {"file": file, "line": line, "function": function} if file is not None else None
    return {"group": group, "seq": seq, "op": op, "sizes": sizes, "site": site,
            "callers": _places_json(callers)}


def _site_json(key: SiteKey, counts: list[int]) -> dict[str, object]:
    group, op, file, line, function, callers = key
    calls, first, last = counts
    return {"group": group, "op": op, "site": {"file": file, "line": line, "function": function},
            "callers": _places_json(callers), "calls": calls, "first_seq": first,
            "last_seq": last}


def env_int(name: str) -> int | None:
    """An environment variable's non-negative integer, or None (unset, or not a number)."""
    value = os.environ.get(name, "")
    return int(value) if value.isdigit() else None
