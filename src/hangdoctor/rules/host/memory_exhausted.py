"""HD301 host.memory_exhausted: Host memory ran out: the OOM killer, allocation failures, or memory
climbing to the machine's size before the job died. A climb short of that is only reported when it
goes on once training runs: starting CUDA (its context, cuBLAS, cuDNN, NCCL) adds gigabytes of
resident memory in the first seconds of every GPU job, and that is no leak."""

from __future__ import annotations

from collections.abc import Iterable

from hangdoctor.analysis.frames import innermost_user_frame
from hangdoctor.analysis.job import JobView
from hangdoctor.analysis.logs import LogKind, scan
from hangdoctor.analysis.tracebacks import tracebacks
from hangdoctor.evidence.model import Frame, JobRecord, TimelineSample
from hangdoctor.i18n import _
from hangdoctor.rules.base import Rule
from hangdoctor.rules.confidence import Confidence
from hangdoctor.rules.finding import Culprit, Finding, Location, Severity
from hangdoctor.rules.log_helpers import output_lines
from hangdoctor.taxonomy import Category

_GIB = 2**30


class HostMemoryExhausted(Rule):
    """host memory exhausted

    Fires when: the OOM killer in the kernel log, allocation failures in the output, or the job's
    memory climbing to the machine's size in the timeline; names the process that grew

    Why: When the machine runs out of RAM, the kernel's OOM killer ends a process with SIGKILL (no
    traceback) or allocations fail. Memory that climbs step after step is usually tensors kept
    across steps, a cache without a bound, or DataLoader workers each duplicating a large Python
    dataset; the job dies, or its ranks hang waiting for the one that was killed.

    Instead: Keep only numbers across steps (`losses.append(loss.item())`, not `loss`), bound
    caches, and lower the peak: smaller batches, fewer DataLoader workers, `prefetch_factor=1`,
    memory-mapped datasets (`numpy.memmap`, Arrow) instead of one Python copy per worker.
    """

    id = "HD301"
    category = Category.HOST_MEMORY_EXHAUSTED
    reads = "capture"
    specificity = 70
    names_culprit = False

    def check(self, job: JobView) -> Iterable[Finding]:
        record = job.bundle.job
        if record is None:
            return
        evidence: list[str] = []
        culprit_pid = None
        for match in scan(record.kernel_log):
            if match.kind == LogKind.OOM_KILLED:
                evidence.append(_("kernel log: {line}", line=match.line))
                culprit_pid = culprit_pid or match.pids[0]
        where = None
        for match in scan(output_lines(job)):
            if match.kind == LogKind.HOST_ALLOC_FAILED:
                evidence.append(_("job output: {line}", line=match.line))
                where = where or _allocating_line(output_lines(job), match.line)
        growth = _largest_growth(record, job.bundle.system.memory_total_bytes)
        climbing = False
        if growth is not None:
            pid, start, peak, share = growth
            near_full = share >= 0.85
            # A steady climb is worth a warning before it reaches the machine's size, if it goes
            # on after start-up.
            climbing = _climbs_after_start_up(record, pid)
            if near_full or climbing:
                evidence.append(
                    _(
                        "pid {pid} grew from {start:.1f} GiB to {peak:.1f} GiB of "
                        "resident memory ({share:.0%} of the machine's memory at the peak)",
                        pid=pid,
                        start=start / _GIB,
                        peak=peak / _GIB,
                        share=share,
                    )
                )
                culprit_pid = culprit_pid or pid
            climbing = climbing and not near_full
        if not evidence:
            return
        only_climbing = climbing and len(evidence) == 1
        yield self.finding(
            severity=Severity.WARNING if only_climbing else Severity.ERROR,
            confidence=Confidence.CERTAIN if len(evidence) > 1 else Confidence.LIKELY,
            title=(
                _("Host memory climbing: pid {pid}", pid=culprit_pid)
                if only_climbing
                else _("Host memory exhausted: pid {pid}", pid=culprit_pid)
            )
            if culprit_pid
            else _("Host memory climbing")
            if only_climbing
            else _("Host memory exhausted"),
            explanation=_(
                "The machine ran out of RAM; the kernel killed a process or allocations failed."
            ),
            culprit=Culprit(pid=culprit_pid, location=Location.of(where))
            if culprit_pid or where
            else None,
            evidence=tuple(evidence[:6]),
            fixes=(
                _(
                    "Find what grows: memory that climbs step after step is usually tensors kept "
                    "across steps (losses.append(loss) without .item() or .detach()), a cache "
                    "without a bound, or DataLoader workers duplicating a large Python dataset."
                ),
                _(
                    "Lower the peak: smaller batches, fewer DataLoader workers, "
                    "prefetch_factor=1, memory-mapped datasets."
                ),
            ),
        )


def _allocating_line(output: tuple[str, ...], failed: str) -> Frame | None:
    """The user's line whose allocation failed: the traceback that ends in that message."""
    raised = next(
        (r for r in tracebacks(output) if r.message and r.message in failed and r.in_user_code),
        None,
    )
    return innermost_user_frame(raised.frames) if raised is not None else None


def _start_up_over(timeline: tuple[TimelineSample, ...]) -> int:
    """Index of the first sample after start-up: the first optimizer step (by then the model,
    CUDA and its libraries are loaded), or the middle of the timeline, whichever is later."""
    first_step = next((i for i, s in enumerate(timeline) if s.steps > 0), 0)
    return max(len(timeline) // 2, first_step)


def _climbs_after_start_up(record: JobRecord, pid: int) -> bool:
    """Whether `pid`'s resident memory still grew by >= 1 GiB and >= 50% after start-up."""
    rss = [
        next((p.rss_bytes for p in s.processes if p.pid == pid and p.rss_bytes), None)
        for s in record.timeline
    ]
    after = [r for r in rss[_start_up_over(record.timeline) :] if r is not None]
    if len(after) < 2:
        return False
    base, peak = after[0], max(after)
    return peak - base >= _GIB and peak >= 1.5 * base


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
