"""Is the job idle (every process waits) or busy (something computes)? Asked of a capture (the
report's hang kind) and, by the supervisor, of its light timeline: there work of the whole tree
counts, a compiler that came and went between two samples, data read or written, measured
against what a loaded machine leaves the job."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from hangdoctor.analysis.job import JobView
from hangdoctor.evidence.model import Frame, ProcessSample, TimelineSample

# A thread that used more than this share of a CPU between samples is computing; so is one
# runnable (state R) in every sample that still got this much of a loaded machine's CPU.
BUSY_THREAD_SHARE = 0.5
CONTENDED_THREAD_SHARE = 0.2


def fair_share(job: JobView) -> float:
    """What share of a core one runnable task could get at the end of the run's light timeline
    (cores over runnable tasks, the job's own included): 1.0 without a timeline (`dump`)."""
    record = job.bundle.job
    last = record.timeline[-1] if record is not None and record.timeline else None
    if last is None or not last.runnable_tasks or not last.cores:
        return 1.0
    return min(1.0, last.cores / last.runnable_tasks)


def contended_share(job: JobView, share: float) -> float:
    """`share`, a bar for a thread runnable in every snapshot, lowered by the load: on a machine
    where a task gets a fifth of a core, a spinning thread gets about that."""
    return share * fair_share(job)


def runnable_throughout(job: JobView, pid: int, tid: int) -> bool:
    """Whether the thread was runnable (state R) in every snapshot: it computes, however little
    of a loaded machine's CPU it got."""
    states = [s.kernel.state for _, s in job.samples(pid, tid) if s.kernel is not None]
    return len(states) >= 2 and all(state == "R" for state in states)


def hang_kind(job: JobView) -> str:
    """`busy` when any thread computes, else `idle` (schema: hang.kind)."""
    for process, thread in job.threads():
        share = job.thread_cpu_share(process.pid, thread.tid)
        if share is not None:
            if share >= BUSY_THREAD_SHARE or (
                share >= contended_share(job, CONTENDED_THREAD_SHARE)
                and runnable_throughout(job, process.pid, thread.tid)
            ):
                return "busy"
        elif thread.kernel is not None and thread.kernel.state == "R":
            return "busy"
    return "idle"


# ---- the supervisor's light timeline: does anything of the job's tree work? ----------------

# A tree that used this share of what one runnable task can get on the machine now computes:
# on an idle machine 0.3 of a core, on one whose cores another job keeps busy correspondingly
# less (a compiler at 30% of a core because the rest goes elsewhere still computes). Never
# below MIN_COMPUTING_CORES, which a hung job's pollers and watchdogs stay under.
COMPUTING_SHARE = 0.3
MIN_COMPUTING_CORES = 0.05
#: Bytes written per second (or read from storage), beyond the job's own output through
#: hangdoctor's pipe, that are work (a checkpoint being written, a dataset being read): far
#: above what heartbeats and status files of a stuck job move, far below what the slowest
#: archive writer does.
IO_WORK_BYTES_PER_S = 64 * 1024
#: Processes that compile: a C/C++ compiler driver and its passes, CUDA's and Triton's tools,
#: the build tools that run them (torch.utils.cpp_extension runs ninja).
COMPILERS = frozenset(
    {
        "cc",
        "c++",
        "gcc",
        "g++",
        "cc1",
        "cc1plus",
        "clang",
        "clang++",
        "as",
        "ld",
        "ld.gold",
        "ld.lld",
        "collect2",
        "nvcc",
        "ptxas",
        "cicc",
        "fatbinary",
        "nvlink",
        "cudafe++",
        "ninja",
        "make",
    }
)
#: Source files whose frames on a stack mean the job compiles: Dynamo converting a frame,
#: Inductor lowering and building kernels, Triton compiling or autotuning, an extension built.
#: (The frames of a compiled model that merely runs, eval_frame.py and the generated code, are
#: not among them.)
COMPILE_FRAME_FILES = (
    "torch/_dynamo/convert_frame.py",
    "torch/_dynamo/symbolic_convert.py",
    "torch/_inductor/compile_fx.py",
    "torch/_inductor/codecache.py",
    "torch/_inductor/async_compile.py",
    "torch/_inductor/select_algorithm.py",
    "torch/_inductor/autotune_process.py",
    "torch/_inductor/cpp_builder.py",
    "triton/compiler/",
    "triton/runtime/autotuner.py",
    "triton/runtime/build.py",
    "torch/utils/cpp_extension.py",
    # JAX lowering to XLA and XLA's compile; TensorFlow tracing a tf.function into a graph
    "jax/_src/compiler.py",
    "jax/_src/interpreters/mlir.py",
    "tensorflow/python/framework/func_graph.py",
)


@dataclass(frozen=True)
class TreeActivity:
    """What the whole process tree did between two samples of the light timeline."""

    span_s: float
    cpu_cores: float  # CPU cores used, by processes that exited in between too
    fair_share: float  # of a core, what one runnable task can get on the machine now
    io_bytes_per_s: float  # written (or read from storage) beyond the job's output
    compilers: tuple[str, ...]  # compiler processes seen in the tree

    @property
    def computing(self) -> bool:
        """Whether the tree used the CPU like something that computes."""
        return self.cpu_cores >= max(MIN_COMPUTING_CORES, COMPUTING_SHARE * self.fair_share)

    @property
    def moving_data(self) -> bool:
        """Whether the tree read or wrote data at the rate of real work."""
        return self.io_bytes_per_s >= IO_WORK_BYTES_PER_S


def _cpu_total(process: ProcessSample) -> float | None:
    if process.cpu_seconds is None:
        return None
    return process.cpu_seconds + (process.children_cpu_seconds or 0.0)


def _io_total(process: ProcessSample) -> float | None:
    """Bytes written by any write call, and read from storage. Not all bytes read: a job stuck
    polling through a subprocess reads a new interpreter's modules each time, from the cache."""
    if process.write_chars is None:
        return None
    return float(process.write_chars + (process.read_bytes or 0))


def tree_delta(
    first: TimelineSample, last: TimelineSample, total: Callable[[ProcessSample], float | None]
) -> float:
    """How much of `total` (a counter that a parent inherits from each child it waits for) the
    tree added between two samples. A process that was there and has gone was waited for by its
    parent, whose counter took over the child's: its amount at `first`, already counted, is
    taken off again, at most what the nearest ancestor still there gained."""
    before = {p.pid: value for p in first.processes if (value := total(p)) is not None}
    after = {p.pid: value for p in last.processes if (value := total(p)) is not None}
    parents = {p.pid: p.ppid for p in first.processes}
    gained = {pid: value - before.get(pid, 0.0) for pid, value in after.items()}
    used = sum(gained.values())
    for pid, amount in before.items():
        if pid in after:
            continue
        ancestor = parents.get(pid)
        for _ in range(len(parents)):  # a whole branch may have gone: its root's parent took it
            if ancestor is None or ancestor in gained:
                break
            ancestor = parents.get(ancestor)
        if ancestor is not None and ancestor in gained:
            absorbed = max(0.0, min(amount, gained[ancestor]))
            gained[ancestor] -= absorbed
            used -= absorbed
    return max(0.0, used)


def tree_activity(window: Sequence[TimelineSample]) -> TreeActivity | None:
    """The tree's work from the first to the last of these samples (compilers: seen in any);
    None when they span no time."""
    if len(window) < 2:
        return None
    first, last = window[0], window[-1]
    span = last.elapsed_s - first.elapsed_s
    if span <= 0:
        return None
    cores = last.cores or 1
    runnable = max(first.runnable_tasks or 0, last.runnable_tasks or 0)
    output = max(0, last.output_bytes - first.output_bytes)
    moved = max(0.0, tree_delta(first, last, _io_total) - output)
    compilers = tuple(
        sorted(
            {
                p.name
                for sample in window
                for p in sample.processes
                if p.name is not None and p.name in COMPILERS
            }
        )
    )
    return TreeActivity(
        span_s=span,
        cpu_cores=tree_delta(first, last, _cpu_total) / span,
        fair_share=min(1.0, cores / runnable) if runnable else 1.0,
        io_bytes_per_s=moved / span,
        compilers=compilers,
    )


def compiling_stack(frames: Sequence[Frame]) -> bool:
    """Whether a thread's stack shows the job compiling (Dynamo, Inductor, Triton, an
    extension build) rather than running what it compiled."""
    return any(
        marker in frame.file.replace("\\", "/")
        for frame in frames
        for marker in COMPILE_FRAME_FILES
    )
