"""HD301 host.memory_exhausted: Host memory ran out: the OOM killer, allocation failures, or memory
climbing to the machine's size before the job died."""

from __future__ import annotations

from collections.abc import Iterable

from hangdoctor.analysis.job import JobView
from hangdoctor.analysis.logs import scan
from hangdoctor.evidence.model import JobRecord, ProcessSample, TimelineSample
from hangdoctor.rules._job_examples import failed_job
from hangdoctor.rules.base import Example, Rule
from hangdoctor.rules.finding import Culprit, Finding, Severity
from hangdoctor.taxonomy import Category

_GIB = 2**30


def _growing_rss(peak_gib: float) -> tuple[TimelineSample, ...]:
    return tuple(
        TimelineSample(elapsed_s=t, processes=(ProcessSample(
            pid=7, cpu_seconds=float(t), rss_bytes=int((1 + t / 10 * (peak_gib - 1)) * _GIB)),))
        for t in range(11)
    )


class HostMemoryExhausted(Rule):
    """Host memory ran out: the OOM killer, allocation failures, or memory climbing to the
    machine's size before the job died."""

    id = "HD301"
    category = Category.HOST_MEMORY_EXHAUSTED
    summary = "host memory exhausted"
    fires_when = (
        "the OOM killer in the kernel log, allocation failures in the output, or the job's "
        "memory climbing to the machine's size in the timeline; names the process that grew"
    )
    reads = "capture"
    specificity = 70
    names_culprit = False
    fires_on = (
        Example("OOM killer in the kernel log", lambda: failed_job(kernel=(
            "2026-11-29T10:00:00 Out of memory: Killed process 7 (python) total-vm:9000kB",),
            exit_code=137)),
        Example("memory climbed to the machine's size", lambda: failed_job(
            exit_code=137, timeline=_growing_rss(15.5), memory_total=16 * _GIB)),
        Example("memory climbing steadily, not yet full", lambda: failed_job(
            exit_code=0, timeline=_growing_rss(6.0), memory_total=64 * _GIB)),
    )
    quiet_on = (
        Example("a job that failed with flat memory", lambda: failed_job(
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


def _largest_growth(record: JobRecord, total: int | None) -> tuple[int, int, int, float] | None:
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
