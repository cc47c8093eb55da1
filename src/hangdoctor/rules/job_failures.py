"""Rules for jobs that failed rather than hung: read the job's output, the kernel log and the
memory timeline that `hangdoctor run` recorded.

HD202 data.worker_killed, HD301 host.memory_exhausted, HD401 gpu.memory_exhausted.
"""

from __future__ import annotations

from collections.abc import Iterable

from hangdoctor.analysis.job import JobView
from hangdoctor.analysis.logs import scan
from hangdoctor.evidence import build as b
from hangdoctor.evidence.model import Bundle, JobRecord, ProcessSample, SystemInfo, TimelineSample
from hangdoctor.rules.base import Example, Rule
from hangdoctor.rules.finding import Culprit, Finding, Severity

_GIB = 2**30


def _job(output: tuple[str, ...] = (), kernel: tuple[str, ...] = (), exit_code: int = 1,
         timeline: tuple[TimelineSample, ...] = (), memory_total: int | None = None) -> Bundle:
    return b.bundle(b.process(1, ppid=None)).model_copy(update={
        "snapshots": (),
        "system": SystemInfo(memory_total_bytes=memory_total),
        "job": JobRecord(command=("python", "train.py"), started_at=0.0, ended_at=60.0,
                         exit_code=exit_code, output_tail=output, kernel_log=kernel,
                         timeline=timeline),
    })


def _growing_rss(peak_gib: float) -> tuple[TimelineSample, ...]:
    return tuple(
        TimelineSample(elapsed_s=t, processes=(ProcessSample(
            pid=7, cpu_seconds=float(t), rss_bytes=int((1 + t / 10 * (peak_gib - 1)) * _GIB)),))
        for t in range(11)
    )


class WorkerKilled(Rule):
    """A DataLoader worker died; the signal says why."""

    id = "HD202"
    category = "data.worker_killed"
    summary = "a DataLoader worker process died"
    specificity = 80
    fires_on = (
        Example("worker killed by SIGBUS (full /dev/shm)", lambda: _job((
            "RuntimeError: DataLoader worker (pid 4242) is killed by signal: Bus error. It is "
            "possible that dataloader's workers are out of shared memory. Please try to raise "
            "your shared memory limit.",))),
        Example("worker killed by SIGKILL", lambda: _job((
            "RuntimeError: DataLoader worker (pid(s) 51, 52) exited unexpectedly",
            "RuntimeError: DataLoader worker (pid 51) is killed by signal: Killed. ",))),
    )
    quiet_on = (
        Example("a clean run", lambda: _job(("epoch 1 done",), exit_code=0)),
    )

    def check(self, job: JobView) -> Iterable[Finding]:
        record = job.bundle.job
        if record is None:
            return
        matches = [m for m in scan(record.output_tail)
                   if m.kind in ("worker_killed", "worker_exited")]
        if not matches:
            return
        best = next((m for m in matches if m.kind == "worker_killed"), matches[0])
        oom = [m for m in scan(record.kernel_log) if m.kind == "oom_killed"
               and set(m.pids) & set(best.pids)]
        signal_name = (best.detail or "").strip()
        if signal_name == "Bus error":
            explanation = ("The worker got SIGBUS: tensors are passed from workers through "
                           "shared memory (/dev/shm), and it was full.")
            fixes = ("Give the job more shared memory: `docker run --shm-size=16g` (Kubernetes: "
                     "an emptyDir with medium: Memory mounted at /dev/shm).",
                     "Or torch.multiprocessing.set_sharing_strategy('file_system'), or fewer "
                     "workers / smaller prefetch_factor.")
        elif signal_name == "Killed" or oom:
            explanation = ("The worker got SIGKILL, which in a training job almost always "
                           "means the kernel's OOM killer (or a container memory limit).")
            fixes = ("Lower host memory use: fewer workers, smaller prefetch_factor, avoid "
                     "copying the whole dataset into each worker (copy-on-read of Python "
                     "lists: use numpy arrays or memory-mapped files).",
                     "Check `dmesg` for `Out of memory: Killed process`, and the container's "
                     "memory limit.")
        else:
            explanation = ("The worker died; the error inside it is lost because it happened "
                           "in a subprocess.")
            fixes = ("Rerun with num_workers=0 to see the error in the main process.",)
        evidence = [f"job output: {m.line}" for m in matches[:3]]
        evidence += [f"kernel log: {m.line}" for m in oom[:2]]
        yield Finding(
            id=self.id, category=self.category, severity=Severity.ERROR, confidence=0.9,
            title=f"DataLoader worker pid {', '.join(map(str, best.pids))} died"
                  + (f" ({signal_name})" if signal_name else ""),
            explanation=explanation,
            culprit=Culprit(pid=best.pids[0] if best.pids else None, role="dataloader_worker"),
            evidence=tuple(evidence), fixes=fixes,
        )


class HostMemoryExhausted(Rule):
    """Host memory ran out: the OOM killer, allocation failures, or memory climbing to the
    machine's size before the job died."""

    id = "HD301"
    category = "host.memory_exhausted"
    summary = "host memory exhausted"
    specificity = 70
    names_culprit = False
    fires_on = (
        Example("OOM killer in the kernel log", lambda: _job(kernel=(
            "2026-11-29T10:00:00 Out of memory: Killed process 7 (python) total-vm:9000kB",),
            exit_code=137)),
        Example("memory climbed to the machine's size", lambda: _job(
            exit_code=137, timeline=_growing_rss(15.5), memory_total=16 * _GIB)),
        Example("memory climbing steadily, not yet full", lambda: _job(
            exit_code=0, timeline=_growing_rss(6.0), memory_total=64 * _GIB)),
    )
    quiet_on = (
        Example("a job that failed with flat memory", lambda: _job(
            exit_code=1, timeline=_growing_rss(1.0), memory_total=16 * _GIB)),
    )

    def check(self, job: JobView) -> Iterable[Finding]:
        record = job.bundle.job
        if record is None:
            return
        evidence: list[str] = []
        culprit_pid = None
        for match in scan(record.kernel_log):
            if match.kind == "oom_killed":
                evidence.append(f"kernel log: {match.line}")
                culprit_pid = culprit_pid or match.pids[0]
        for match in scan(record.output_tail):
            if match.kind == "host_alloc_failed":
                evidence.append(f"job output: {match.line}")
        growth = _largest_growth(record, job.bundle.system.memory_total_bytes)
        climbing = False
        if growth is not None:
            pid, start, peak, share = growth
            near_full = share >= 0.85
            # A steady climb is worth a warning before it reaches the machine's size.
            climbing = peak - start >= _GIB and peak >= 2 * start
            if near_full or climbing:
                evidence.append(
                    f"pid {pid} grew from {start / _GIB:.1f} GiB to {peak / _GIB:.1f} GiB of "
                    f"resident memory ({share:.0%} of the machine's memory at the peak)")
                culprit_pid = culprit_pid or pid
            climbing = climbing and not near_full
        if not evidence:
            return
        only_climbing = climbing and len(evidence) == 1
        yield Finding(
            id=self.id, category=self.category,
            severity=Severity.WARNING if only_climbing else Severity.ERROR,
            confidence=0.9 if len(evidence) > 1 else 0.75,
            title=("Host memory climbing" if only_climbing else "Host memory exhausted")
            + (f": pid {culprit_pid}" if culprit_pid else ""),
            explanation=("The machine ran out of RAM; the kernel killed a process or "
                         "allocations failed."),
            culprit=Culprit(pid=culprit_pid) if culprit_pid else None,
            evidence=tuple(evidence[:6]),
            fixes=("Find what grows: memory that climbs step after step is usually tensors kept "
                   "across steps (losses.append(loss) without .item() or .detach()), a cache "
                   "without a bound, or DataLoader workers duplicating a large Python dataset.",
                   "Lower the peak: smaller batches, fewer DataLoader workers, "
                   "prefetch_factor=1, memory-mapped datasets."),
        )


def _largest_growth(record: JobRecord, total: int | None):
    """(pid, first rss, peak rss, peak share of memory) of the process that grew most."""
    if not record.timeline or not total:
        return None
    first: dict[int, int] = {}
    peak: dict[int, int] = {}
    for sample in record.timeline:
        for process in sample.processes:
            if process.rss_bytes is None:
                continue
            first.setdefault(process.pid, process.rss_bytes)
            peak[process.pid] = max(peak.get(process.pid, 0), process.rss_bytes)
    if not peak:
        return None
    pid = max(peak, key=lambda p: peak[p] - first[p])
    total_peak = max(sum(p.rss_bytes or 0 for p in s.processes) for s in record.timeline)
    return pid, first[pid], peak[pid], total_peak / total


class GpuMemoryExhausted(Rule):
    """CUDA ran out of device memory."""

    id = "HD401"
    category = "gpu.memory_exhausted"
    summary = "GPU memory exhausted"
    specificity = 70
    names_culprit = False
    fires_on = (
        Example("CUDA out of memory", lambda: _job((
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has "
            "a total capacity of 79.15 GiB of which 1.23 GiB is free.",))),
    )
    quiet_on = (
        Example("host memory error only", lambda: _job(("MemoryError",))),
    )

    def check(self, job: JobView) -> Iterable[Finding]:
        record = job.bundle.job
        if record is None:
            return
        matches = [m for m in scan(record.output_tail) if m.kind == "cuda_oom"]
        if not matches:
            return
        yield Finding(
            id=self.id, category=self.category, severity=Severity.ERROR, confidence=0.95,
            title="GPU memory exhausted (CUDA out of memory)",
            explanation="An allocation on the GPU failed because device memory was full.",
            evidence=tuple(f"job output: {m.line}" for m in matches[:3]),
            fixes=("Lower the peak: smaller batch size with gradient accumulation, mixed "
                   "precision (torch.autocast), activation checkpointing.",
                   "Look for memory kept alive across steps (losses.append(loss)), and check "
                   "fragmentation with PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True.",
                   "Check that no other process uses the same GPU (nvidia-smi)."),
        )
