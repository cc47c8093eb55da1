"""The rules hangdoctor runs, in one list."""

from __future__ import annotations

from hangdoctor.rules.base import Rule
from hangdoctor.rules.blocked_io import BlockedIO
from hangdoctor.rules.busy_loop import BusyLoop
from hangdoctor.rules.data_pipeline import DataPipelineStall
from hangdoctor.rules.deadlock import LockDeadlock
from hangdoctor.rules.distributed import (
    CollectiveMismatch,
    RankExited,
    Rendezvous,
    Straggler,
    UnevenInputs,
)
from hangdoctor.rules.gpu_state import GpuKernelHang, GpuMemoryFull
from hangdoctor.rules.job_failures import GpuMemoryExhausted, HostMemoryExhausted, WorkerKilled
from hangdoctor.rules.logs.algorithm import NonFiniteFromLog
from hangdoctor.rules.logs.data import DataLoaderTimeout, SharedMemoryExhausted
from hangdoctor.rules.logs.distributed import (
    CollectiveTimeoutFromLog,
    RankExitedFromLog,
    RendezvousFailed,
    TransportFailure,
)
from hangdoctor.rules.logs.environment import LibraryMismatch, OpenFilesLimit, VersionIncompatible
from hangdoctor.rules.logs.gpu import GpuDeviceFault
from hangdoctor.rules.logs.process import HungTaskInKernelLog
from hangdoctor.rules.native_blocked import NativeBlocked
from hangdoctor.rules.progress_rules import InputBound, NonFiniteLoss

ALL_RULES: tuple[type[Rule], ...] = (
    LockDeadlock,
    BlockedIO,
    NativeBlocked,
    BusyLoop,
    DataPipelineStall,
    Straggler,
    CollectiveMismatch,
    UnevenInputs,
    RankExited,
    Rendezvous,
    NonFiniteLoss,
    InputBound,
    WorkerKilled,
    HostMemoryExhausted,
    GpuMemoryExhausted,
    GpuKernelHang,
    GpuMemoryFull,
    HungTaskInKernelLog,
    SharedMemoryExhausted,
    DataLoaderTimeout,
    CollectiveTimeoutFromLog,
    TransportFailure,
    RankExitedFromLog,
    RendezvousFailed,
    GpuDeviceFault,
    VersionIncompatible,
    LibraryMismatch,
    OpenFilesLimit,
    NonFiniteFromLog,
)
