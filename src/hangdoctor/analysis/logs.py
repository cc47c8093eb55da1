"""Recognise well-known failure lines in a job's output and in the kernel log.

`scan` turns lines into `LogMatch`es, one `kind` per recognised message, with the values the
message carries (a rank, a sequence number, an Xid, a library) in `fields`. Every pattern matches
the exact wording of the program that prints it; the comment beside each says where that wording
comes from. `torchrun_failures` reads the multi-line failure summary torchrun prints last.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from functools import lru_cache

# PyTorch 2.13 (torch/csrc/DataLoader.cpp, torch/utils/data/dataloader.py) and the Linux OOM
# killer (mm/oom_kill.c).
_WORKER_KILLED = re.compile(
    r"DataLoader worker \(pid\(?s?\)? ?([\d, ]+)\) is killed by signal: ([^.]+)\."
)
_WORKER_EXITED = re.compile(
    r"DataLoader worker \(pid\(?s?\)? ?([\d, ]+)\) exited unexpectedly(?: with exit code (-?\d+))?"
)
_OOM_KILLED = re.compile(r"(?:Memory cgroup )?[Oo]ut of memory: Killed process (\d+) \(([^)]*)\)")
_CUDA_OOM = re.compile(r"CUDA out of memory|OutOfMemoryError|CUBLAS_STATUS_ALLOC_FAILED")
_HOST_ALLOC = re.compile(
    r"\bMemoryError\b|Cannot allocate memory|std::bad_alloc|"
    r"DefaultCPUAllocator: can't allocate memory"
)

_PG_RANK = r"\[(?:PG (?:ID )?(?P<pg>\d+)[^\]]*? )?Rank (?P<rank>\d+)\]"


class LogKind(str, Enum):
    """What a recognised log line says: `matches_of(job, LogKind.NCCL_TIMEOUT)`. A name, not a
    string, so that a misspelt kind fails type-checking instead of matching nothing. (A str, as
    its value: `enum.StrEnum` is Python 3.11+.)"""

    def __str__(self) -> str:
        return self.value

    NCCL_TIMEOUT = "nccl_timeout"
    NCCL_PROGRESS = "nccl_progress"
    GLOO_TIMEOUT = "gloo_timeout"
    TRANSPORT_ERROR = "transport_error"
    NCCL_WATCHDOG_STUCK = "nccl_watchdog_stuck"
    FR_MISSING_RANKS = "fr_missing_ranks"
    CGROUP_OOM = "cgroup_oom"
    CGROUP_OOM_TASK = "cgroup_oom_task"
    RANK_EXIT = "rank_exit"
    COLLECTIVE_SIZE_MISMATCH = "collective_size_mismatch"
    NCCL_DUPLICATE_GPU = "nccl_duplicate_gpu"
    NCCL_INVALID_USAGE = "nccl_invalid_usage"
    CUDA_KERNEL_ERROR = "cuda_kernel_error"
    RENDEZVOUS_ERROR = "rendezvous_error"
    STORE_CONNECT_TIMEOUT = "store_connect_timeout"
    STORE_CONNECT_FAILED = "store_connect_failed"
    STORE_BARRIER_TIMEOUT = "store_barrier_timeout"
    STORE_CLIENTS_TIMEOUT = "store_clients_timeout"
    COORDINATION_TASK_AGAIN = "coordination_task_again"
    XID = "xid"
    GPU_LOST = "gpu_lost"
    PCIE_ERROR = "pcie_error"
    HUNG_TASK = "hung_task"
    NO_KERNEL_IMAGE = "no_kernel_image"
    ARCH_UNSUPPORTED = "arch_unsupported"
    ARCH_SUPPORTED = "arch_supported"
    DRIVER_INSUFFICIENT = "driver_insufficient"
    DRIVER_TOO_OLD = "driver_too_old"
    SYMBOL_VERSION_MISSING = "symbol_version_missing"
    UNDEFINED_SYMBOL = "undefined_symbol"
    SHARED_OBJECT_MISSING = "shared_object_missing"
    TOO_MANY_OPEN_FILES = "too_many_open_files"
    SHM_EXHAUSTED = "shm_exhausted"
    BUS_ERROR = "bus_error"
    DATALOADER_TIMEOUT = "dataloader_timeout"
    NONFINITE_VALUE = "nonfinite_value"
    NONFINITE_SKIPPED = "nonfinite_skipped"
    LOSS_SCALE_OVERFLOW = "loss_scale_overflow"
    LOSS_SCALE_COLLAPSED = "loss_scale_collapsed"
    NONFINITE_DETECTED = "nonfinite_detected"
    WORKER_KILLED = "worker_killed"
    WORKER_EXITED = "worker_exited"
    OOM_KILLED = "oom_killed"
    CUDA_OOM = "cuda_oom"
    HOST_ALLOC_FAILED = "host_alloc_failed"


@dataclass(frozen=True)
class _Pattern:
    """A message to recognise. `needle` is a literal it always contains, a cheap pre-check (a
    log holds hundreds of thousands of lines); `quick`, for the case-insensitive ones, is a
    cheap test it must pass before the full regex is tried."""

    kind: LogKind
    needle: str
    regex: re.Pattern[str]
    quick: Callable[[str], bool] | None = None


def _p(
    kind: LogKind,
    needle: str,
    pattern: str,
    flags: int = 0,
    quick: Callable[[str], bool] | None = None,
) -> _Pattern:
    return _Pattern(kind, needle, re.compile(pattern, flags), quick)


_NONFINITE_WORD = re.compile(r"[nN][aA][nN]\b|[iI][nN][fF](?:[iI][nN][iI][tT][yY])?\b")


def _may_be_nonfinite(line: str) -> bool:
    """Whether a line holds the word nan or inf (most log lines do not; many say INFO)."""
    lowered = line.lower()
    if "nan" not in lowered and "inf" not in lowered.replace("info", ""):
        return False
    return bool(_NONFINITE_WORD.search(line))


# Every one of these is checked on every line; a line may match several.
_PATTERNS: tuple[_Pattern, ...] = (
    # --- distributed -------------------------------------------------------------------------
    # ProcessGroupNCCL's watchdog, as printed by torch 1.x-2.x, e.g.
    # https://github.com/hiyouga/LlamaFactory/issues/7396 (with NumelIn/NumelOut, torch >= 2.2),
    # https://github.com/OFA-Sys/OFA/issues/271 (without them, torch 1.x), and with
    # "[PG ID 0 PG GUID 0(default_pg) Rank 1]" in newer versions:
    # https://github.com/XPixelGroup/BasicSR/issues/737
    _p(
        LogKind.NCCL_TIMEOUT,
        "Watchdog caught collective operation timeout",
        _PG_RANK + r" Watchdog caught collective operation timeout: WorkNCCL\(SeqNum=(?P<seq>\d+),"
        r" OpType=(?P<op>\w+)(?P<rest>.*?)\) ran for (?P<ran_ms>\d+) milliseconds",
    ),
    # The watchdog's follow-up line with the rank's own progress (torch >= 2.3), same sources.
    _p(
        LogKind.NCCL_PROGRESS,
        "detected by watchdog at work",
        _PG_RANK + r" Exception \(either an error or timeout\) detected by watchdog at work: "
        r"(?P<seq>\d+), last enqueued NCCL work: (?P<enqueued>-?\d+), last completed NCCL work: "
        r"(?P<completed>-?\d+)",
    ),
    # gloo's per-operation timeout (gloo/transport/tcp/unbound_buffer.cc), e.g.
    # https://github.com/meta-pytorch/torchtune/issues/2676
    _p(
        LogKind.GLOO_TIMEOUT,
        "Timed out waiting",
        r"Timed out waiting (?P<timeout_ms>\d+)ms for (?P<op>recv|send) operation to complete",
    ),
    # gloo's wording when a pair's own timeout expires mid-operation (gloo/transport/tcp/pair.cc)
    _p(
        LogKind.GLOO_TIMEOUT,
        "Application timeout caused pair closure",
        r"Application timeout caused pair closure",
    ),
    # gloo's socket errors (gloo/transport/tcp/pair.cc), e.g.
    # https://github.com/RVC-Project/Retrieval-based-Voice-Conversion-WebUI/issues/1882
    _p(
        LogKind.TRANSPORT_ERROR,
        "gloo/transport",
        r"gloo/transport/[\w/]+\.cc:\d+\] (?P<message>(?:Connection closed by peer|Read error|"
        r"Write error|Connection reset by peer|Connection refused|Connect timeout|Broken pipe)"
        r".*)",
    ),
    # NCCL's socket and InfiniBand errors and the error torch raises from them, e.g.
    # https://github.com/NVIDIA/nccl/issues/795, https://github.com/NVIDIA/nccl/issues/2076,
    # https://github.com/tatsu-lab/stanford_alpaca/issues/207
    _p(
        LogKind.TRANSPORT_ERROR,
        "peer",
        r"(?P<message>(?:Net|socketProgress\w*) ?: Connection closed by remote peer.*|"
        r"Call to (?:recv|send|connect) (?:from|to)? ?\S* ?failed ?: "
        r"(?:Connection reset by peer|Connection refused|Broken pipe).*|"
        r"NET/IB ?: Got completion from peer.*with (?:error|status).*)",
    ),
    # NCCL's socket connect giving up (misc/socket.cc), e.g.
    # https://github.com/modelscope/ms-swift/issues/8043 (socketPollConnect ... returned
    # Connection refused) and https://github.com/NVIDIA/nccl-tests/issues/166
    # (socketStartConnect: Connect to ... failed : Software caused connection abort)
    _p(
        LogKind.TRANSPORT_ERROR,
        "Connect",
        r"(?P<message>socket(?:Poll|Start)?Connect: [Cc]onnect to \S+ (?:returned|failed ?:) ?"
        r"(?:Connection refused|Software caused connection abort|Connection timed out|"
        r"No route to host|Network is unreachable).*)",
    ),
    # ncclSystemError as torch raises it: a system call of NCCL's (a socket, mostly) failed,
    # e.g. https://github.com/vllm-project/vllm/issues/10523,
    # https://github.com/zai-org/CogVLM2/issues/178
    _p(
        LogKind.TRANSPORT_ERROR,
        "unhandled system error",
        r"NCCL error.*?(?P<message>unhandled system error.*)",
    ),
    # ProcessGroupNCCL's heartbeat monitor ending a process whose watchdog is stuck, e.g.
    # https://github.com/hiyouga/LlamaFactory/issues/6953
    _p(
        LogKind.NCCL_WATCHDOG_STUCK,
        "Heartbeat monitor timed out",
        _PG_RANK + r" Heartbeat monitor timed out!.*?(?:workMetaList_\.size\(\)\s*=\s*"
        r"(?P<pending>\d+))?$",
    ),
    _p(
        LogKind.NCCL_WATCHDOG_STUCK,
        "watchdog got stuck",
        _PG_RANK + r".*watchdog got stuck for (?P<seconds>\d+) seconds",
    ),
    # PyTorch's Flight Recorder analyzer (torch.distributed.flight_recorder.fr_trace,
    # `torchfrtrace`), e.g. https://github.com/pytorch/pytorch/pull/140969
    _p(
        LogKind.FR_MISSING_RANKS,
        "Not all ranks joining collective",
        r"Not all ranks joining collective: sequence number: (?P<seq>\d+)",
    ),
    # Slurm's cgroup OOM report (slurmstepd, both wordings) and srun's per-task summary, e.g.
    # https://github.com/chrisknewman/tusas/issues/149, https://github.com/hafs-community/HAFS/issues/101
    _p(
        LogKind.CGROUP_OOM,
        "oom",
        r"slurmstepd: error: Detected (?P<count>\d+) oom[-_]kill events? ?(?:\(s\))? in "
        r"(?:StepId=(?P<step>[\w.]*\w)|step (?P<step2>[\w.]*\w))",
    ),
    _p(
        LogKind.CGROUP_OOM_TASK,
        "Out Of Memory",
        r"srun: error: (?P<host>[^:\s]+): tasks? (?P<tasks>[\d,-]+): Out Of Memory",
    ),
    _p(
        LogKind.TRANSPORT_ERROR,
        "remote process",
        r"(?P<message>remote process exited or there was a network error.*|ncclRemoteError: .*)",
    ),
    # The TCPStore during training (torch/csrc/distributed/c10d/TCPStore.cpp): the store lives
    # in rank 0's launcher, so these often mean that host went away.
    _p(
        LogKind.TRANSPORT_ERROR,
        "DistNetworkError",
        r"DistNetworkError: (?!The client socket has (?:timed out|failed to connect))"
        r"(?P<message>.*)",
    ),
    # torchrun's agent when a worker dies (torch/distributed/elastic/multiprocessing/api.py), e.g.
    # https://github.com/showlab/EgoVLP/issues/21
    _p(
        LogKind.RANK_EXIT,
        "failed (exitcode:",
        r"failed \(exitcode: (?P<exitcode>-?\d+)\) local_rank: (?P<local_rank>\d+) "
        r"\(pid: (?P<pid>\d+)\) of binary",
    ),
    # torch.multiprocessing.spawn's ProcessExitedException (torch/multiprocessing/spawn.py).
    _p(
        LogKind.RANK_EXIT,
        "terminated with",
        r"process (?P<rank>\d+) terminated with (?:signal (?P<signal>SIG\w+)|"
        r"exit code (?P<exitcode>-?\d+))",
    ),
    # The torchelastic rendezvous (torch/distributed/elastic/rendezvous/api.py), e.g.
    # https://github.com/pytorch/pytorch/issues/80772, https://github.com/pytorch/pytorch/issues/107021
    # gloo's check when a rank receives another size than it posted: ranks called different
    # collectives (or the same one on different tensors), e.g. "op.preamble.length <=
    # op.nbytes. 8 vs 4. Received data size doesn't match expected size. Is there a
    # distributed collective mismatch in your code?" (gloo/transport/tcp/pair.cc)
    _p(
        LogKind.COLLECTIVE_SIZE_MISMATCH,
        "collective mismatch",
        r"(?:(?P<got>\d+) vs (?P<wanted>\d+)\.\s*)?(?:Received data size doesn't match expected "
        r"size\.\s*)?Is there a distributed collective mismatch in your code\?",
    ),
    # TORCH_DISTRIBUTED_DEBUG=DETAIL's own check of collective fingerprints.
    _p(
        LogKind.COLLECTIVE_SIZE_MISMATCH,
        "mismatch",
        r"Detected mismatch between collectives on ranks",
    ),
    # NCCL refusing two ranks on one GPU: "NCCL error ... invalid usage ... Last error:
    # Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 60"
    _p(
        LogKind.NCCL_DUPLICATE_GPU,
        "Duplicate GPU detected",
        r"Duplicate GPU detected\s*:\s*rank (?P<rank>\d+) and rank (?P<other>\d+) both on CUDA "
        r"device (?P<device>\w+)",
    ),
    _p(LogKind.NCCL_INVALID_USAGE, "invalid usage", r"NCCL error.*invalid usage"),
    # CUDA errors raised in the job: a kernel's assert or an illegal address (the
    # application's fault, as Xid 13/31 in the kernel log).
    _p(
        LogKind.CUDA_KERNEL_ERROR,
        "CUDA error",
        r"CUDA error: (?P<message>device-side assert triggered|an illegal memory access was "
        r"encountered|misaligned address|an illegal instruction was encountered|unspecified "
        r"launch failure)",
    ),
    # JAX's (and TensorFlow's) coordination service when a task connects again with a new
    # incarnation, a restarted process or a second one given the same process_id
    # (xla/tsl coordination_service.cc): "ABORTED: 1 unexpectedly tried to connect with a
    # different incarnation. It has likely restarted." (also "/job:jax_worker/replica:0/task:1")
    _p(
        LogKind.COORDINATION_TASK_AGAIN,
        "different incarnation",
        r"(?:task:)?(?P<task>\d+) unexpectedly tried to connect with a different incarnation",
    ),
    _p(
        LogKind.RENDEZVOUS_ERROR,
        "Rendezvous",
        r"(?P<error>Rendezvous(?:Timeout|Connection|Closed)Error)(?::\s*(?P<message>.*))?",
    ),
    # c10d's TCPStore client (torch/csrc/distributed/c10d/socket.cpp), both spellings of the
    # address: https://github.com/lllyasviel/ControlNet/issues/382 and
    # https://github.com/pytorch/pytorch/issues/107021
    _p(
        LogKind.STORE_CONNECT_TIMEOUT,
        "The client socket has timed out",
        r"The client socket has timed out after (?P<after>\S+?) while trying to connect to "
        r"(?:\((?P<host>[^,()]+), (?P<port>\d+)\)|(?P<address>[^\s()]+?))\.?(?:\s|$)",
    ),
    # The retry warning before that: https://github.com/gensyn-ai/rl-swarm/issues/197
    _p(
        LogKind.STORE_CONNECT_FAILED,
        "The client socket has failed to connect",
        r"The client socket has failed to connect to (?P<address>\S+) "
        r"\(errno: (?P<errno>\d+) - (?P<reason>[^)]*)\)",
    ),
    # init_process_group's store-based barrier (torch/distributed/distributed_c10d.py, both
    # versions of the wording).
    _p(
        LogKind.STORE_BARRIER_TIMEOUT,
        "store based barrier",
        r"Timed out initializing process group in store based barrier on rank:? (?P<rank>\d+), "
        r"for key: (?P<key>\S+) \(world_size=(?P<world>\d+), "
        r"(?:worker_count|num_workers_joined)=(?P<joined>\d+), timeout=(?P<timeout>[^)]+)\)",
    ),
    # The TCPStore server waiting for its clients (torch/csrc/distributed/c10d/TCPStore.cpp).
    _p(
        LogKind.STORE_CLIENTS_TIMEOUT,
        "waiting for clients",
        r"Timed out after (?P<seconds>\d+) seconds waiting for clients\. "
        r"(?P<joined>\d+)/(?P<world>\d+) clients joined",
    ),
    # --- GPU, driver, kernel --------------------------------------------------------------------
    # NVIDIA's Xid line: https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html,
    # e.g. "NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python, GPU has fallen off the bus."
    _p(
        LogKind.XID,
        "NVRM: Xid",
        r"NVRM: Xid \((?:PCI:)?(?P<device>[0-9A-Fa-f]{4}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}[.\d]*)\): "
        r"(?P<xid>\d+),\s*(?P<message>.*)",
    ),
    # The same event without an Xid, printed by newer drivers:
    # https://github.com/NVIDIA/NVSentinel/issues/155
    _p(
        LogKind.GPU_LOST,
        "fallen off the bus",
        r"NVRM: (?!Xid).*?(?:GPU (?:at )?(?:PCI:)?(?P<device>[0-9A-Fa-f]{4}:[0-9A-Fa-f]{2}:"
        r"[0-9A-Fa-f]{2}[.\d]*))?.*fallen off the bus",
    ),
    # PCIe Advanced Error Reporting (drivers/pci/pcie/aer.c), e.g.
    # https://github.com/rwth-i6/returnn/issues/1500
    _p(
        LogKind.PCIE_ERROR,
        "PCIe Bus Error",
        r"(?P<driver>[\w-]+) (?P<device>[0-9A-Fa-f]{4}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.\d): "
        r"(?:AER: )?PCIe Bus Error: severity=(?P<severity>[^,]+), type=(?P<type>[^,]+)",
    ),
    # The hung-task detector (kernel/hung_task.c), e.g.
    # https://github.com/gluster/gluster-health-report/pull/19
    _p(
        LogKind.HUNG_TASK,
        "blocked for more than",
        r"INFO: task (?P<comm>[^:\s][^:]*?):(?P<pid>\d+) blocked for more than "
        r"(?P<seconds>\d+) seconds",
    ),
    # --- environment --------------------------------------------------------------------------
    # CUDA's message for a binary without code for this GPU, and torch's warning naming the
    # architectures: https://github.com/Turoad/CLRNet/issues/83
    _p(LogKind.NO_KERNEL_IMAGE, "no kernel image", r"no kernel image is available for execution"),
    _p(
        LogKind.ARCH_UNSUPPORTED,
        "is not compatible with the current PyTorch installation",
        r"(?P<gpu>[^:\s][^:]*?) with CUDA capability (?P<arch>sm_\d+) is not compatible with the "
        r"current PyTorch installation",
    ),
    _p(
        LogKind.ARCH_SUPPORTED,
        "install supports CUDA capabilities",
        r"install supports CUDA capabilities (?P<archs>sm_[\w ]+)",
    ),
    # cudaErrorInsufficientDriver's text (CUDA runtime API, cudaGetErrorString).
    _p(
        LogKind.DRIVER_INSUFFICIENT,
        "CUDA driver version is insufficient",
        r"CUDA driver version is insufficient for CUDA runtime version",
    ),
    # torch/cuda/__init__.py (_check_driver / the CUDA initialization warning), e.g.
    # https://github.com/lllyasviel/Fooocus/issues/1313
    _p(
        LogKind.DRIVER_TOO_OLD,
        "driver on your system is too old",
        r"The NVIDIA driver on your system is too old \(found version (?P<found>\d+)\)",
    ),
    # The dynamic loader (glibc's dl-version.c), e.g.
    # https://github.com/SkyworkAI/SkyReels-V2/issues/105
    _p(
        LogKind.SYMBOL_VERSION_MISSING,
        "not found",
        r"(?P<library>/?[\w./+-]+\.so[\w.]*): version [`'](?P<version>[^'`]+)' not found"
        r"(?: \(required by (?P<required_by>[^)]+)\))?",
    ),
    # e.g. https://github.com/Dao-AILab/flash-attention/issues/1691
    _p(
        LogKind.UNDEFINED_SYMBOL,
        "undefined symbol",
        r"(?P<library>/?[\w./+-]+\.so[\w.]*): undefined symbol: (?P<symbol>\S+)",
    ),
    _p(
        LogKind.SHARED_OBJECT_MISSING,
        "cannot open shared object file",
        r"(?P<library>[\w./+-]+\.so[\w.]*): cannot open shared object file",
    ),
    # EMFILE, and what multiprocessing says when file descriptors run out while DataLoader
    # workers pass tensors: https://github.com/pytorch/pytorch/issues/973
    _p(LogKind.TOO_MANY_OPEN_FILES, "open files", r"Too many open files"),
    _p(LogKind.TOO_MANY_OPEN_FILES, "ancdata", r"received 0 items of ancdata"),
    # --- data ---------------------------------------------------------------------------------
    # Shared memory (/dev/shm) full while workers pass tensors
    # (torch/multiprocessing/reductions.py, aten's MapAllocator), e.g.
    # https://github.com/donydchen/mvsplat/issues/17, https://github.com/MIC-DKFZ/nnUNet/issues/294
    _p(
        LogKind.SHM_EXHAUSTED,
        "</torch_",
        r"unable to (?:write to file|open shared memory object|mmap \d+ bytes from file) "
        r"<(?P<file>/torch_[\d_]+)>",
    ),
    _p(
        LogKind.SHM_EXHAUSTED,
        "/dev/shm",
        r"/dev/shm.*No space left on device|"
        r"No space left on device.*/dev/shm",
    ),
    # torch/csrc/DataLoader.cpp's SIGBUS handler in a worker, e.g.
    # https://github.com/DengpanFu/LUPerson/issues/20
    _p(
        LogKind.SHM_EXHAUSTED,
        "insufficient shared memory",
        r"Unexpected bus error encountered in worker\. This might be caused by insufficient "
        r"shared memory",
    ),
    # The shell's report of a process killed by SIGBUS.
    _p(LogKind.BUS_ERROR, "Bus error", r"Bus error \(core dumped\)"),
    # DataLoader(timeout=...) expiring (torch/utils/data/dataloader.py).
    _p(
        LogKind.DATALOADER_TIMEOUT,
        "DataLoader timed out",
        r"DataLoader timed out after (?P<seconds>\d+) seconds",
    ),
    # --- algorithm ----------------------------------------------------------------------------
    # A logged loss or gradient norm that is NaN or Inf, in the usual shapes: "loss: nan",
    # "loss=inf", "{'loss': nan, 'grad_norm': nan}" (Hugging Face Trainer), "loss tensor(nan".
    _p(
        LogKind.NONFINITE_VALUE,
        "",
        r"(?P<key>[\w./-]*loss[\w./-]*|grad_norm|grad-norm|gnorm)['\"]?(?:\s*[:=]\s*|\s+)"
        r"(?:tensor\()?['\"]?(?P<value>[-+]?(?:nan|inf(?:inity)?))\b",
        re.IGNORECASE,
        quick=_may_be_nonfinite,
    ),
    # A training loop's own skip of a non-finite batch ("non-finite loss, skipping batch",
    # "NaN loss detected, skipping step"): harmless once, a livelock when every batch is.
    _p(
        LogKind.NONFINITE_SKIPPED,
        "",
        r"(?:non-?finite|\bnan\b|\binf\b)[^\n]{0,60}\bskip|\bskip\w*[^\n]{0,60}"
        r"(?:non-?finite|\bnan\b)",
        re.IGNORECASE,
        quick=lambda line: "skip" in line.lower(),
    ),
    # Dynamic loss scaling skipping a step: NVIDIA Apex
    # (https://github.com/NVIDIA/apex/issues/318) and DeepSpeed
    # (https://github.com/zai-org/CogVideo/issues/233).
    _p(
        LogKind.LOSS_SCALE_OVERFLOW,
        "Skipping step",
        r"Gradient overflow\.\s+Skipping step, loss scaler \d+ reducing loss scale to "
        r"(?P<scale>[\d.e+-]+)|OVERFLOW! Rank (?P<rank>\d+) Skipping step\. Attempted loss "
        r"scale: (?P<attempted>[\d.e+-]+), reducing to (?P<scale2>[\d.e+-]+)",
    ),
    # Loss scaling gave up: DeepSpeed (https://github.com/ymcui/Chinese-LLaMA-Alpaca/issues/534)
    # and fairseq's dynamic loss scaler.
    _p(
        LogKind.LOSS_SCALE_COLLAPSED,
        "loss scale",
        r"Current loss scale already at minimum|Minimum loss scale reached",
    ),
    # Autograd's anomaly mode (torch/csrc/autograd/engine.cpp) and Lightning's
    # detect_nan_parameters; torch.nn.utils.clip_grad_norm_(error_if_nonfinite=True).
    _p(
        LogKind.NONFINITE_DETECTED,
        "",
        r"Function '(?P<function>\w+)' returned nan values in its \d+\w* output|"
        r"Detected (?:a )?(?:nan|NaN|NAN)\b.*|"
        r"for gradients from `parameters` is non-finite",
    ),
)

_STEP = re.compile(r"\b(?:global[_ ]step|step|iter(?:ation)?|it)\b\s*[:=#]?\s*(\d+)", re.IGNORECASE)
# What launchers and log collectors put before each line of a process's output, one piece at a
# time (several may stack: a timestamp, then torchrun's rank). Each piece eats at most one
# following space, so a traceback's indentation survives.
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_RAY_REPEATED = re.compile(r"\s*\[repeated \d+x across cluster\]\s*$")
_LEVEL = r"(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL)"
_PREFIX_PIECES: tuple[tuple[str, re.Pattern[str]], ...] = (
    # torchrun (`[rank1]:`, `--tee`'s `[default0]:` or `[0]`), torch's `[RANK 3]`
    (
        "rank",
        re.compile(
            r"\s*\[(?:default|rank|defaultrank)?(?P<rank>\d+)\]:\s?|"
            r"\s*\[(?P<rank2>\d+)\]\s|\s*\[RANK (?P<rank3>\d+)\]:?\s?"
        ),
    ),
    # mpirun --tag-output: `[1,0]<stderr>:`
    ("rank", re.compile(r"\s*\[\d+,(?P<rank>\d+)\]<std(?:out|err)>:\s?")),
    # Ray: `(RayTrainWorker pid=1234)`, `(pid=1234, ip=10.0.0.1)`
    ("pid", re.compile(r"\s*\((?:[\w.:]+ )?pid=(?P<pid>\d+)(?:, ip=(?P<ip>[\w.:-]+))?\)\s?")),
    # Timestamps: logging's `2026-12-01 10:00:00,123 - ERROR - `, `kubectl logs --timestamps`'s
    # `2026-12-01T10:00:00.123456789Z `, bracketed ones; an optional logger name and level.
    (
        "time",
        re.compile(
            r"\s*\[?\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?\]?"
            r"(?:(?:\s*[-|]\s*|\s*)(?:[\w.]+\s*[-|]\s*)?\[?" + _LEVEL + r"\]?(?:\s*[-|:])?)?\s?"
        ),
    ),
    # Slurm's `srun --label`: `0: `
    ("rank", re.compile(r"(?P<rank>\d+): ")),
)


@dataclass(frozen=True)
class Prefixed:
    """A line of output without what the launcher put before it, and whose line it was."""

    text: str
    rank: int | None = None
    #: Which process printed it, as far as the prefixes tell (`rank 1`, `pid 1234@10.0.0.1`):
    #: lines of several processes interleave in one log.
    stream: str | None = None


def split_prefix(line: str) -> Prefixed:
    """The line without ANSI colours and launcher prefixes, with the rank or pid they name."""
    text = (
        _RAY_REPEATED.sub("", _ANSI.sub("", line))
        if ("\x1b" in line or "repeated" in line)
        else line
    )
    head = text.lstrip()[:1]
    if not head or not (head in "[(" or head.isdigit()):
        return Prefixed(text=text)  # most lines: nothing before them
    rank: int | None = None
    stream: str | None = None
    for _ in range(4):
        for kind, piece in _PREFIX_PIECES:
            match = piece.match(text)
            if match is None or not match.group(0):
                continue
            groups = {k: v for k, v in match.groupdict().items() if v is not None}
            number = groups.get("rank") or groups.get("rank2") or groups.get("rank3")
            if kind == "rank" and number is not None:
                rank, stream = int(number), f"rank {number}"
            elif kind == "pid":
                stream = f"pid {groups['pid']}@{groups.get('ip', '')}"
            text = text[match.end() :]
            break
        else:
            break
    return Prefixed(text=text, rank=rank, stream=stream)


@dataclass(frozen=True)
class LogMatch:
    """One recognised line."""

    kind: LogKind
    line: str
    pids: tuple[int, ...] = ()
    detail: str | None = None
    #: Position of the line among the lines scanned, to tell which came first.
    index: int = -1
    #: The values the message carries, by name (e.g. rank, seq, op, xid, library).
    fields: Mapping[str, str] = field(default_factory=dict)

    def number(self, name: str) -> int | None:
        """An integer field, if the message had it."""
        value = self.fields.get(name)
        try:
            return int(value) if value is not None else None
        except ValueError:
            return None


def _pids(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", text))


def line_rank(line: str) -> int | None:
    """The rank a line is prefixed with by its launcher (torchrun's `[rank3]:`, `--tee`'s
    `[3]`, mpirun's `[1,3]<stderr>:`, `srun --label`'s `3: `), if any."""
    return split_prefix(line).rank


_CLASSIC_NEEDLES = (
    "DataLoader worker",
    "Killed process",
    "CUDA out of memory",
    "OutOfMemoryError",
    "CUBLAS_STATUS_ALLOC_FAILED",
    "MemoryError",
    "Cannot allocate memory",
    "bad_alloc",
    "can't allocate memory",
)


def _classic(line: str, index: int) -> LogMatch | None:
    """The first patterns hangdoctor knew, one kind per line, in their original order. They
    stay apart from `_PATTERNS` (which reports every pattern a line matches) because the kinds
    are exclusive, first one wins, and carry a pid list and a detail the table does not."""
    if not any(needle in line for needle in _CLASSIC_NEEDLES):
        return None
    if match := _WORKER_KILLED.search(line):
        return LogMatch(
            LogKind.WORKER_KILLED, line.strip(), _pids(match[1]), match[2].strip(), index
        )
    if match := _WORKER_EXITED.search(line):
        return LogMatch(LogKind.WORKER_EXITED, line.strip(), _pids(match[1]), match[2], index)
    if match := _OOM_KILLED.search(line):
        return LogMatch(LogKind.OOM_KILLED, line.strip(), (int(match[1]),), match[2], index)
    if _CUDA_OOM.search(line):
        return LogMatch(LogKind.CUDA_OOM, line.strip(), index=index)
    if _HOST_ALLOC.search(line):
        return LogMatch(LogKind.HOST_ALLOC_FAILED, line.strip(), index=index)
    return None


# Most lines hold none of the needles: one pass over the distinct ones tells so.
_NEEDLES = tuple(dict.fromkeys(p.needle for p in _PATTERNS if p.needle))


def _matches(line: str, index: int) -> list[LogMatch]:
    found: list[LogMatch] = []
    has_needle = any(needle in line for needle in _NEEDLES)
    for pattern in _PATTERNS:
        if pattern.needle and (not has_needle or pattern.needle not in line):
            continue
        if pattern.quick is not None and not pattern.quick(line):
            continue
        match = pattern.regex.search(line)
        if match is None:
            continue
        fields = {k: v for k, v in match.groupdict().items() if v is not None}
        if "scale2" in fields:
            fields["scale"] = fields.pop("scale2")
        if "rank" not in fields and (rank := line_rank(line)) is not None:
            fields["rank"] = str(rank)
        pids = (int(fields["pid"]),) if "pid" in fields else ()
        if pattern.kind == LogKind.XID and (pid := re.search(r"pid=['\"]?(\d+)", line)):
            pids = (int(pid[1]),)
        found.append(
            LogMatch(pattern.kind, line.strip(), pids, fields.get("message"), index, fields)
        )
    return found


@lru_cache(maxsize=8)
def _scan(lines: tuple[str, ...]) -> tuple[LogMatch, ...]:
    found: list[LogMatch] = []
    for index, line in enumerate(lines):
        if classic := _classic(line, index):
            found.append(classic)
        found.extend(_matches(line, index))
    return tuple(found)


def scan(lines: Iterable[str]) -> list[LogMatch]:
    """Every recognised failure line, in order (cached: every rule scans the same lines)."""
    return list(_scan(lines if isinstance(lines, tuple) else tuple(lines)))


def step_near(lines: tuple[str, ...], index: int, lookback: int = 20) -> int | None:
    """The training step a line reports, or the last step reported shortly before it."""
    for position in range(index, max(-1, index - lookback - 1), -1):
        if match := _STEP.search(lines[position]):
            return int(match[1])
    return None


@dataclass(frozen=True)
class RankFailure:
    """One entry of torchrun's failure summary (or of its agent's `failed (exitcode: ...)`)."""

    rank: int | None
    local_rank: int | None
    exitcode: int | None
    pid: int | None
    host: str | None = None
    cause: str | None = None
    root_cause: bool = False
    index: int = -1
    line: str = ""

    @property
    def signal(self) -> int | None:
        """The signal that killed it (torchrun reports signals as negative exit codes)."""
        return -self.exitcode if self.exitcode is not None and self.exitcode < 0 else None


_SUMMARY_FIELD = re.compile(r"(?:^|\s)(time|host|rank|exitcode|error_file|traceback)\s*:\s*(.*)$")


def torchrun_failures(lines: tuple[str, ...]) -> list[RankFailure]:
    """The failed ranks from torchrun's ChildFailedError summary ("Failures:" and "Root Cause
    (first observed failure):" entries of rank, exitcode, pid, traceback), e.g.
    https://github.com/Vision-CAIR/MiniGPT-4/issues/237; without a summary, from the agent's
    `failed (exitcode: N) local_rank: R (pid: P)` lines."""
    failures: list[RankFailure] = []
    in_summary = root = False
    entry: dict[str, str] = {}
    entry_index = -1

    def flush() -> None:
        if "rank" in entry or "exitcode" in entry:
            rank = re.match(r"\s*(\d+)(?:\s*\(local_rank:\s*(\d+)\))?", entry.get("rank", ""))
            code = re.match(r"\s*(-?\d+)(?:\s*\(pid:\s*(\d+)\))?", entry.get("exitcode", ""))
            failures.append(
                RankFailure(
                    rank=int(rank[1]) if rank else None,
                    local_rank=int(rank[2]) if rank and rank[2] else None,
                    exitcode=int(code[1]) if code else None,
                    pid=int(code[2]) if code and code[2] else None,
                    host=entry.get("host"),
                    cause=entry.get("traceback"),
                    root_cause=root,
                    index=entry_index,
                    line=entry.get("_line", ""),
                )
            )
        entry.clear()

    for index, line in enumerate(lines):
        if "Root Cause (first observed failure)" in line:
            flush()
            in_summary, root = True, True
        elif line.strip().endswith("Failures:"):
            flush()
            in_summary, root = True, False
        elif in_summary and re.match(r"^\s*\[\d+\]:\s*$", line):
            flush()
        elif in_summary and (field := _SUMMARY_FIELD.search(line)):
            entry[field[1]] = field[2].strip()
            if field[1] == "rank":
                entry_index, entry["_line"] = index, line.strip()
        elif in_summary and line.strip().startswith("===="):
            flush()
            in_summary = False
    flush()
    if failures:
        return failures
    for match in scan(lines):
        if match.kind == LogKind.RANK_EXIT:
            signal = match.fields.get("signal")
            code = match.number("exitcode")
            if code is None and signal:
                code = -_SIGNALS.get(signal, 0) or None
            failures.append(
                RankFailure(
                    rank=match.number("rank"),
                    local_rank=match.number("local_rank"),
                    exitcode=code,
                    pid=match.pids[0] if match.pids else None,
                    index=match.index,
                    line=match.line,
                )
            )
    return failures


_SIGNALS = {
    "SIGHUP": 1,
    "SIGINT": 2,
    "SIGQUIT": 3,
    "SIGILL": 4,
    "SIGTRAP": 5,
    "SIGABRT": 6,
    "SIGBUS": 7,
    "SIGFPE": 8,
    "SIGKILL": 9,
    "SIGUSR1": 10,
    "SIGSEGV": 11,
    "SIGUSR2": 12,
    "SIGPIPE": 13,
    "SIGALRM": 14,
    "SIGTERM": 15,
}
SIGNAL_NAMES = {number: name for name, number in _SIGNALS.items()}
