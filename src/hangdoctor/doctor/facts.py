"""What the doctor's probes observed: plain typed data, serialisable to JSON.

Checks read these and nothing else, so every check can be tested with facts built by hand or
recorded on another machine (a GPU node, a container with a tiny /dev/shm).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from hangdoctor.evidence.model import ProbeError

#: `ulimit` reports RLIM_INFINITY as "unlimited"; we store it as this value.
UNLIMITED = -1


class Fact(BaseModel):
    """Base of every fact record: immutable, unknown fields rejected."""

    model_config = ConfigDict(frozen=True, extra="forbid")


class Versions(Fact):
    """Framework, toolkit and compiler versions. None: not installed or not found."""

    python: str
    torch: str | None = None
    torch_cuda: str | None = Field(default=None, description="CUDA runtime torch was built with")
    torch_hip: str | None = None
    cudnn: str | None = Field(default=None, description="from the nvidia-cudnn wheel, or torch")
    nccl: str | None = Field(default=None, description="from the nvidia-nccl wheel, or torch")
    tensorflow: str | None = None
    jax: str | None = None
    jaxlib: str | None = None
    keras: str | None = Field(default=None, description="Keras 3, or Keras 2 as tf-keras")
    driver: str | None = Field(default=None, description="NVIDIA kernel driver version")
    driver_cuda: str | None = Field(default=None, description="newest CUDA the driver supports")
    nvcc: str | None = Field(default=None, description="CUDA release of nvcc on PATH")
    gcc: str | None = None
    torch_extension_locks: tuple[str, ...] = Field(
        default=(), description="lock files left in the torch extensions build directory"
    )


class Limits(Fact):
    """Operating-system limits and resources that decide whether a job can start and go on."""

    max_map_count: int | None = None
    somaxconn: int | None = None
    nofile_soft: int | None = None
    nofile_hard: int | None = None
    memlock_soft: int | None = Field(default=None, description="bytes; -1 unlimited")
    memlock_hard: int | None = None
    shm_total_bytes: int | None = None
    shm_free_bytes: int | None = None
    swap_total_bytes: int | None = None
    swap_used_bytes: int | None = None
    memory_total_bytes: int | None = None
    rdma_devices: tuple[str, ...] = ()
    is_root: bool = False
    cap_sys_ptrace: bool | None = None
    ptrace_scope: int | None = Field(default=None, description="kernel.yama.ptrace_scope")
    py_spy: str | None = Field(default=None, description="path of py-spy, if found")
    world_size: int | None = Field(default=None, description="WORLD_SIZE, when set")


class KernelLog(Fact):
    """Kernel log lines within the time window (already redacted)."""

    source: str = Field(description="`dmesg`, or the file it was read from")
    window: str = Field(description="how far back lines were kept, e.g. `24h` or `all`")
    lines: tuple[str, ...] = ()
    readable: bool = True
    failure: ProbeError | None = None


class Libraries(Fact):
    """C and C++ runtime libraries, what the installed code needs from them, and where we run."""

    glibc: str | None = None
    libstdcxx_path: str | None = None
    libstdcxx_max: str | None = Field(default=None, description="newest GLIBCXX_ it provides")
    wheels_glibc_needed: str | None = Field(
        default=None, description="newest manylinux glibc among installed wheels' tags"
    )
    wheels_glibc_needed_by: tuple[str, ...] = ()
    extensions_glibcxx_needed: str | None = None
    extensions_glibcxx_needed_by: tuple[str, ...] = ()
    container: str | None = Field(default=None, description="docker, podman, kubernetes, ...")
    driver_module: str | None = Field(default=None, description="from /proc/driver/nvidia")
    driver_userspace: str | None = Field(default=None, description="from libcuda.so's name")


class GpuProcess(Fact):
    """A process with a context on a GPU."""

    pid: int
    used_memory_bytes: int | None = None
    name: str | None = None


class GpuDevice(Fact):
    """One GPU's readings through NVML. None: NVML could not tell (not supported)."""

    index: int
    name: str | None = None
    uuid: str | None = None
    pci_bus_id: str | None = None
    memory_used_bytes: int | None = None
    memory_total_bytes: int | None = None
    utilization_gpu_percent: int | None = None
    ecc_uncorrected_volatile: int | None = None
    ecc_uncorrected_aggregate: int | None = None
    ecc_corrected_volatile: int | None = None
    retired_pages_pending: bool | None = None
    retired_pages_count: int | None = None
    remapped_rows_pending: bool | None = None
    remapped_rows_failure: bool | None = None
    pcie_gen: int | None = None
    pcie_gen_max: int | None = None
    pcie_width: int | None = None
    pcie_width_max: int | None = None
    pcie_replay_counter: int | None = None
    clock_event_reasons: int | None = Field(
        default=None, description="nvmlDeviceGetCurrentClocksEventReasons bit mask"
    )
    temperature_c: int | None = None
    processes: tuple[GpuProcess, ...] = ()


class Gpus(Fact):
    """The GPUs NVML sees. `available` False with no failure: no NVIDIA GPU or driver here."""

    available: bool = False
    devices: tuple[GpuDevice, ...] = ()
    failure: ProbeError | None = None


class Distributed(Fact):
    """The distributed-training environment of this shell."""

    environment: dict[str, str] = Field(
        default_factory=dict, description="NCCL_*, TORCH_*, MASTER_* ..., redacted"
    )
    master_addr: str | None = None
    master_addr_resolves_to: tuple[str, ...] | None = None
    master_addr_error: str | None = None
    master_port: str | None = None
    master_port_free: bool | None = None
    master_port_error: str | None = None
    master_addr_is_local: bool | None = None
    interfaces: tuple[str, ...] = Field(default=(), description="network interface names")


class FrameworkSettings(Fact):
    """JAX's, XLA's, TensorFlow's and Keras's settings in this shell's environment."""

    environment: dict[str, str] = Field(
        default_factory=dict, description="XLA_*, JAX_*, TF_*, KERAS_* variables, redacted"
    )


SelftestStatus = Literal["passed", "failed", "hung", "skipped"]


class SelftestResult(Fact):
    """One self-test: a small program run in a child with a time limit."""

    name: str
    status: SelftestStatus
    duration_s: float = 0.0
    timeout_s: float = 0.0
    message: str = ""
    where: tuple[str, ...] = Field(
        default=(), description="where a hung child was stuck, innermost frame first"
    )
    details: dict[str, str] = Field(default_factory=dict)


class Facts(Fact):
    """Everything the doctor observed on one node."""

    hostname: str
    versions: Versions
    limits: Limits
    kernel_log: KernelLog
    libraries: Libraries
    gpus: Gpus
    distributed: Distributed
    frameworks: FrameworkSettings = Field(
        default_factory=FrameworkSettings, description="JAX and TensorFlow settings"
    )
    selftests: tuple[SelftestResult, ...] | None = Field(
        default=None, description="None when --selftest was not asked for"
    )
    dataloader_workers: int = Field(default=8, description="workers per process to plan for")
    failures: tuple[ProbeError, ...] = ()
