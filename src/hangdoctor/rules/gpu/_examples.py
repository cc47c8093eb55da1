"""Example evidence for the GPU rules' fires_on/quiet_on, in NVML's format (utilization.gpu in
%, memory in bytes), and a thread waiting for the device as py-spy shows it. Kept apart from
`_state.py`, the analysis the rules run."""

from __future__ import annotations

from hangdoctor.analysis.device import NVIDIA_DEVICE_PREFIX
from hangdoctor.evidence import build as b
from hangdoctor.evidence.model import (
    Bundle,
    Frame,
    GpuSample,
    JobRecord,
    ProcessEvidence,
    ThreadEvidence,
    TimelineSample,
)

GIB = 2**30
#: An H200-sized device (memory.total in bytes: 143,771 MiB).
H200_MEMORY = 143_771 * 2**20
#: The device nodes a CUDA process holds open (fd -> (target, mode)).
GPU_FILES = {
    3: (f"{NVIDIA_DEVICE_PREFIX}ctl", "rw"),
    4: (f"{NVIDIA_DEVICE_PREFIX}-uvm", "rw"),
    5: (f"{NVIDIA_DEVICE_PREFIX}0", "rw"),
}


def gpu(utilization: float, used_gib: float, total: int = 80 * GIB) -> GpuSample:
    return GpuSample(
        index=0,
        utilization_percent=utilization,
        memory_used_bytes=int(used_gib * GIB),
        memory_total_bytes=total,
    )


def timeline(
    utilization: float, used_gib: float, seconds: int = 30, progress_until: int = 5
) -> tuple[TimelineSample, ...]:
    return tuple(
        TimelineSample(
            elapsed_s=float(t), steps=min(t, progress_until), gpus=(gpu(utilization, used_gib),)
        )
        for t in range(seconds)
    )


def item_wait_frames(native: bool = False) -> tuple[Frame, ...]:
    """`loss.item()` behind a kernel that never ends, as py-spy shows it on an H200 (torch
    2.11+cu130): with `--native`, CUDA's synchronisation under `_local_scalar_dense_cuda`."""
    lib = f"{b.SITE}/torch/lib"
    frames = (
        [
            b.frame(
                "/usr/lib/x86_64-linux-gnu/libcuda.so.580.159.04",
                0,
                "cuStreamSynchronize",
                native=True,
            ),
            b.frame(
                f"{b.SITE}/nvidia/cu13/lib/libcudart.so.13", 0, "cudaStreamSynchronize", native=True
            ),
            b.frame(
                f"{lib}/libtorch_cuda.so", 0, "at::native::_local_scalar_dense_cuda", native=True
            ),
            b.frame(f"{lib}/libtorch_cpu.so", 0, "at::native::item", native=True),
            b.frame(f"{lib}/libtorch_python.so", 0, "THPVariable_item", native=True),
        ]
        if native
        else []
    )
    frames += [
        b.frame(
            "train.py",
            88,
            "train",
            code="total += loss.item()",
            loops=("for step, (x, y) in enumerate(loader):",),
        ),
        b.frame("train.py", 120, "<module>", code="train()"),
    ]
    return tuple(frames)


def gpu_process(pid: int, *threads: ThreadEvidence, on_gpu: bool = True) -> ProcessEvidence:
    return b.process(pid, *threads, ppid=None, files=GPU_FILES if on_gpu else None)


def item_wait(native: bool = False, cpu: float = 0.0, on_gpu: bool = True) -> ProcessEvidence:
    """The main thread of a GPU job spinning in `loss.item()` (state R: CUDA's default
    synchronisation polls)."""
    return gpu_process(
        7,
        b.thread(7, *item_wait_frames(native), name="MainThread", state="R", cpu=cpu, active=True),
        on_gpu=on_gpu,
    )


def hung_job(
    utilization: float, used_gib: float, native: bool = False, on_gpu: bool = True
) -> Bundle:
    """`hangdoctor run` declared the hang: 25 s without progress, NVML sampled throughout."""
    record = JobRecord(
        started_at=0.0,
        timeline=timeline(utilization, used_gib),
        hang_declared_s=29.0,
        hang_kind="busy",
        last_progress_s=5.0,
    )
    before = item_wait(native, cpu=100.0, on_gpu=on_gpu)
    after = item_wait(native, cpu=100.5, on_gpu=on_gpu)
    bundle = b.bundle(before, later=[[after]])
    return bundle.model_copy(update={"job": record})


def dumped(
    utilization: float | None, native: bool = False, on_gpu: bool = True, used_gib: float = 20.0
) -> Bundle:
    """`hangdoctor dump PID`: two snapshots 0.5 s apart, NVML read at each (or no NVML)."""
    readings = (gpu(utilization, used_gib, H200_MEMORY),) if utilization is not None else ()
    bundle = b.bundle(
        item_wait(native, cpu=100.0, on_gpu=on_gpu),
        later=[[item_wait(native, cpu=100.5, on_gpu=on_gpu)]],
    )
    return bundle.model_copy(
        update={
            "snapshots": tuple(s.model_copy(update={"gpus": readings}) for s in bundle.snapshots)
        }
    )
