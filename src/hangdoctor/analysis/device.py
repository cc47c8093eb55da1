"""Is a host thread waiting for the GPU? Such a thread is waiting, not computing: CUDA's default
synchronisation spins on a CPU core, so by CPU use alone it looks like a busy loop (seen on an
H200: `loss.item()` behind a kernel that never ends keeps its thread at 100% inside
`cudaStreamSynchronize`). Rules (kernel hang, busy loop) and the supervisor (when to declare a
hang) ask the same question here, from Python frames and, when present, native frames."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from hangdoctor.analysis.frames import blame_frame, python_frames
from hangdoctor.evidence.model import Frame, OpenFile, ProcessEvidence
from hangdoctor.i18n import _

#: Device nodes the NVIDIA driver gives every process that created a CUDA context
#: (`/dev/nvidiactl`, `/dev/nvidia0`, `/dev/nvidia-uvm`): `fuser -v /dev/nvidia*` finds them.
NVIDIA_DEVICE_PREFIX = "/dev/nvidia"

# Native functions that block the calling host thread until the device has done its work:
# the CUDA runtime and driver APIs, PyTorch's wrappers around them (`.item()` on a CUDA tensor
# ends in `_local_scalar_dense_cuda`), and NCCL work waited for from the host.
_NATIVE_WAITS = (
    "cudaStreamSynchronize",
    "cuStreamSynchronize",
    "cudaDeviceSynchronize",
    "cuCtxSynchronize",
    "cudaEventSynchronize",
    "cuEventSynchronize",
    "cudaMemcpy",
    "cuMemcpyDtoH",
    "cuMemcpyDtoH_v2",
    "c10::cuda::stream_synchronize",
    "c10::cuda::device_synchronize",
    "at::native::_local_scalar_dense_cuda",
    "c10d::ProcessGroupNCCL::WorkNCCL::wait",
    "c10d::ProcessGroupNCCL::WorkNCCL::synchronize",
)
# A CUDA API name is the clearest way to say what the thread waits in; the runtime's (outermost,
# what PyTorch calls) rather than the driver's underneath it.
_API = re.compile(r"^cu[A-Z]|^cuda[A-Z]")

# Python-visible calls that copy a result to the host or wait for the device. `.item()` and its
# kin are C methods: no Python frame of their own, so the calling line shows them.
_SYNCING_LINE = re.compile(
    r"\.(?P<method>item|cpu|tolist|numpy)\(|\.to\([^)]*['\"]cpu['\"]|"
    r"(?P<sync>(?:torch\.)?cuda\.synchronize)\(|\.synchronize\(\s*\)"
)
# torch's own Python functions that wait for the device, by file and function.
_TORCH_WAITS = (
    ("torch/cuda/__init__.py", "synchronize"),  # torch.cuda.synchronize()
    ("torch/cuda/streams.py", "synchronize"),  # Stream.synchronize(), Event.synchronize()
)
# Formatting a CUDA tensor (print, f-strings) copies it to the host first.
_TENSOR_FORMATTING = "torch/_tensor_str.py"
_COLLECTIVES = "torch/distributed/"


@dataclass(frozen=True)
class DeviceWait:
    """A host thread waiting for the device to finish the work queued before it."""

    call: str  # what it waits in: `.item()`, `torch.cuda.synchronize()`, `cuStreamSynchronize`
    frame: Frame | None  # where to point the user: the innermost line of their code
    native: bool  # seen in native frames (certain), else read from the Python line
    in_collective: bool  # the wait belongs to a torch.distributed call (a peer may be late)


def uses_gpu(open_files: Sequence[OpenFile]) -> bool:
    """Whether a process holds an NVIDIA device open: it has a CUDA context."""
    return any(f.target.startswith(NVIDIA_DEVICE_PREFIX) for f in open_files)


def process_uses_gpu(process: ProcessEvidence) -> bool:
    """`uses_gpu` for captured evidence."""
    return uses_gpu(process.open_files)


def _native_name(frame: Frame) -> str:
    """`at::native::lapackSvd<float, float>` -> `at::native::lapackSvd`; C names unchanged."""
    return re.sub(r"<.*", "", frame.function.split("(", 1)[0]).strip()


def _native_wait(frames: Sequence[Frame]) -> str | None:
    """The native wait among the frames above the innermost Python frame, if any: the outermost
    CUDA API call when one is there, else PyTorch's wrapper."""
    found: list[str] = []
    for frame in frames:
        if not frame.native:
            break
        name = _native_name(frame)
        if any(name == wait or name.endswith("::" + wait) for wait in _NATIVE_WAITS):
            found.append(name)
    if not found:
        return None
    api = [name for name in found if _API.match(name)]
    return api[-1] if api else found[-1]


def _python_wait(frames: Sequence[Frame], gpu: bool) -> str | None:
    """The Python-level wait the innermost Python frame is in, if any."""
    python = python_frames(frames)
    if not python:
        return None
    innermost = python[0]
    path = innermost.file.replace("\\", "/")
    function = innermost.function.rsplit(".", 1)[-1]
    for suffix, name in _TORCH_WAITS:
        if path.endswith(suffix) and function == name:
            return (
                "torch.cuda.synchronize()"
                if suffix.endswith("__init__.py")
                else (f"{innermost.function}()")
            )
    if not gpu:
        return None  # `.item()` on a CPU tensor computes; only a GPU process waits there
    if path.endswith(_TENSOR_FORMATTING):
        return _("formatting a CUDA tensor")
    match = _SYNCING_LINE.search(innermost.code or "")
    if match is None:
        return None
    if match["method"]:
        return f".{match['method']}()"
    return "torch.cuda.synchronize()" if match["sync"] else match[0].strip()


def device_wait(frames: Sequence[Frame], *, gpu: bool) -> DeviceWait | None:
    """How the thread with these frames (innermost first) waits for the device, or None.

    Native frames (`--native`) are conclusive. Python frames alone are read only in a process
    that holds a GPU (`gpu`): there the innermost line `.item()`, `.cpu()`, `.tolist()`,
    `.numpy()` or `.to("cpu")` waits for the device; in a CPU job it computes.
    """
    native = _native_wait(frames)
    call = native or _python_wait(frames, gpu)
    if call is None:
        return None
    in_collective = any(_COLLECTIVES in f.file.replace("\\", "/") for f in python_frames(frames))
    return DeviceWait(
        call=call, frame=blame_frame(frames), native=native is not None, in_collective=in_collective
    )
