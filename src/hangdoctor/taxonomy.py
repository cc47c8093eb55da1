"""The categories of causes hangdoctor names: the one list in the code, kept equal to the
project's TAXONOMY.md (a test compares them). The ids are a public contract: never rename one."""

from __future__ import annotations

from enum import Enum


class Category(str, Enum):
    """What kind of problem a finding names; its value is the public id."""

    GPU_MEMORY_EXHAUSTED = "gpu.memory_exhausted"
    GPU_DEVICE_FAULT = "gpu.device_fault"
    GPU_KERNEL_HANG = "gpu.kernel_hang"
    NATIVE_BLOCKED = "native.blocked"
    HOST_MEMORY_EXHAUSTED = "host.memory_exhausted"
    ENV_VERSION_INCOMPATIBLE = "env.version_incompatible"
    ENV_OS_LIMITS = "env.os_limits"
    ENV_LIBRARY_MISMATCH = "env.library_mismatch"
    DATA_PIPELINE_STALL = "data.pipeline_stall"
    DATA_WORKER_KILLED = "data.worker_killed"
    ALGORITHM_NONFINITE = "algorithm.nonfinite"
    DISTRIBUTED_COLLECTIVE_MISMATCH = "distributed.collective_mismatch"
    DISTRIBUTED_UNEVEN_INPUTS = "distributed.uneven_inputs"
    DISTRIBUTED_STRAGGLER = "distributed.straggler"
    DISTRIBUTED_RENDEZVOUS = "distributed.rendezvous"
    DISTRIBUTED_COLLECTIVE_TIMEOUT = "distributed.collective_timeout"
    DISTRIBUTED_RANK_EXITED = "distributed.rank_exited"
    DISTRIBUTED_NETWORK = "distributed.network"
    PROCESS_DEADLOCK = "process.deadlock"
    PROCESS_BUSY_LOOP = "process.busy_loop"
    PROCESS_BLOCKED_IO = "process.blocked_io"
    PROCESS_EXCEPTION = "process.exception"
    PROCESS_UNEXPLAINED = "process.unexplained"

    @property
    def family(self) -> str:
        """The part before the dot (`distributed`), which is also the rules' folder."""
        return self.value.partition(".")[0]

    def __str__(self) -> str:
        return self.value
