"""The timelines of report.html, as plain series: what the supervisor's light sampler saw
(progress per rank, the gap between the ranks, the share of time each waited for data, CPU and
memory per process, GPU utilisation and memory per device). Only what was sampled is drawn: a
chart without data is left out, never filled in."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import pairwise

from hangdoctor.evidence.model import Bundle, TimelineSample
from hangdoctor.i18n import _
from hangdoctor.report.model import Report
from hangdoctor.report.render_markdown import has_root_cause

#: Points per series at most: the sampler keeps 15 minutes at one a second, and 64 ranks of
#: that, drawn whole, would make the page several megabytes for no visible difference.
MAX_POINTS = 300


@dataclass(frozen=True)
class Series:
    """One line of a chart; `culprit`: it belongs to the root cause's culprit (drawn apart)."""

    label: str
    values: list[float | None]
    culprit: bool = False


@dataclass(frozen=True)
class Chart:
    """One chart: seconds since the job started on x, one line per series."""

    id: str
    title: str
    unit: str
    x: list[float]
    series: list[Series] = field(default_factory=list)

    def as_json(self) -> dict[str, object]:
        return {
            "id": self.id,
            "title": self.title,
            "unit": self.unit,
            "x": self.x,
            "series": [
                {"label": s.label, "values": s.values, "culprit": s.culprit} for s in self.series
            ],
        }


@dataclass(frozen=True)
class Timeline:
    """The charts, and the silent stretch before the hang was declared (shaded on each)."""

    charts: list[Chart]
    last_progress_s: float | None = None
    declared_s: float | None = None
    samples: int = 0


def _thin(samples: Sequence[TimelineSample]) -> list[TimelineSample]:
    """At most MAX_POINTS samples, evenly spread, the last one always kept."""
    if len(samples) <= MAX_POINTS:
        return list(samples)
    step = (len(samples) - 1) / (MAX_POINTS - 1)
    return [samples[round(i * step)] for i in range(MAX_POINTS)]


def _rate(
    samples: list[TimelineSample], read: Callable[[TimelineSample], float | None], scale: float
) -> list[float | None]:
    """`read`'s change per second between each sample and the one before, times `scale`; the
    first point, and a point where either reading is missing, has none."""
    values: list[float | None] = [None]
    for before, after in pairwise(samples):
        then, now = read(before), read(after)
        span = after.elapsed_s - before.elapsed_s
        if then is None or now is None or span <= 0:
            values.append(None)
        else:
            values.append(round(max(0.0, now - then) / span * scale, 1))
    return values


class _Culprit:
    """The process the root cause names as its culprit."""

    def __init__(self, report: Report) -> None:
        root = report.root_cause if has_root_cause(report) else None
        self.pid = root.culprit.pid if root is not None and root.culprit is not None else None
        self.rank = root.culprit.rank if root is not None and root.culprit is not None else None

    def is_it(self, pid: int | None, rank: int | None) -> bool:
        """By pid; by rank only where the culprit has no pid (a rank's DataLoader workers
        carry its rank)."""
        if self.pid is not None:
            return pid == self.pid
        return self.rank is not None and rank == self.rank


def _process_label(report: Report) -> Callable[[int], str]:
    known = {p.pid: p for p in report.processes}

    def label(pid: int) -> str:
        process = known.get(pid)
        if process is not None and process.rank is not None:
            return _("rank {rank} (pid {pid})", rank=process.rank, pid=pid)
        if process is not None:
            return _("pid {pid} ({role})", pid=pid, role=process.role.value)
        return _("pid {pid}", pid=pid)

    return label


def _rank_keys(samples: list[TimelineSample]) -> list[tuple[int, int | None]]:
    """(pid, rank) of the processes whose own counters were sampled: those with a rank; in a
    job without ranks, every process that reported progress."""
    seen: dict[int, int | None] = {}
    for sample in samples:
        for entry in sample.ranks:
            if entry.pid not in seen or entry.rank is not None:
                seen[entry.pid] = entry.rank
    ranked = [(pid, rank) for pid, rank in seen.items() if rank is not None]
    if ranked:
        return sorted(ranked, key=lambda key: (key[1], key[0]))
    return sorted(seen.items())


def _data_wait(samples: list[TimelineSample], pid: int) -> Callable[[TimelineSample], float | None]:
    """Reads one process's time spent waiting for data so far, from a sample."""
    waits = {id(s): {e.pid: e.data_wait_s for e in s.ranks} for s in samples}
    return lambda sample: waits[id(sample)].get(pid)


def _progress_charts(
    samples: list[TimelineSample], report: Report, culprit: _Culprit
) -> list[Chart]:
    x = [s.elapsed_s for s in samples]
    keys = _rank_keys(samples)
    label = _process_label(report)
    if not keys:
        if not any(s.steps or s.batches for s in samples):
            return []
        steps = any(s.steps for s in samples)
        total = [float(s.steps if steps else s.batches) for s in samples]
        title = _("Optimizer steps, all ranks together") if steps else _("Batches, all ranks")
        return [Chart("progress", title, _("count"), x, [Series(_("all ranks"), list(total))])]

    by_pid = [{e.pid: e for e in s.ranks} for s in samples]

    def counter(pid: int, name: str) -> list[float | None]:
        values: list[float | None] = []
        for entries in by_pid:
            entry = entries.get(pid)
            values.append(None if entry is None else float(getattr(entry, name)))
        return values

    uses_steps = any(e.steps for s in samples for e in s.ranks)
    name = "steps" if uses_steps else "batches"
    per_rank = [
        Series(
            _("rank {rank}", rank=rank) if rank is not None else label(pid),
            counter(pid, name),
            culprit.is_it(pid, rank),
        )
        for pid, rank in keys
    ]
    title = _("Optimizer steps per rank") if uses_steps else _("Batches received per rank")
    charts = [Chart("progress", title, _("count"), x, per_rank)]
    if len(per_rank) > 1:
        gap: list[float | None] = []
        for index in range(len(x)):
            now = [v for s in per_rank if (v := s.values[index]) is not None]
            gap.append(max(now) - min(now) if len(now) > 1 else None)
        charts.append(
            Chart(
                "gap",
                _("The gap: the furthest rank's count minus the slowest one's"),
                _("count"),
                x,
                [Series(_("gap"), gap)],
            )
        )
    if any(e.data_wait_s for s in samples for e in s.ranks):
        waits = [
            Series(
                series.label,
                _rate(samples, _data_wait(samples, pid), 100.0),
                series.culprit,
            )
            for (pid, _rank), series in zip(keys, per_rank, strict=True)
        ]
        if any(v is not None for series in waits for v in series.values):
            # a rate needs two readings: a job that failed after one has none to draw
            charts.append(
                Chart("data_wait", _("Share of time waiting for data, per rank"), "%", x, waits)
            )
    return charts


def _process_charts(
    samples: list[TimelineSample], report: Report, culprit: _Culprit
) -> list[Chart]:
    pids: list[int] = []
    for sample in samples:
        pids += [p.pid for p in sample.processes if p.pid not in pids]
    if not pids:
        return []
    x = [s.elapsed_s for s in samples]
    label = _process_label(report)
    ranks = {p.pid: p.rank for p in report.processes}

    by_pid = {id(s): {p.pid: p for p in s.processes} for s in samples}

    def reading(pid: int, name: str) -> Callable[[TimelineSample], float | None]:
        def read(sample: TimelineSample) -> float | None:
            found = by_pid[id(sample)].get(pid)
            value = getattr(found, name) if found is not None else None
            return None if value is None else float(value)

        return read

    cpu = [
        Series(
            label(pid),
            _rate(samples, reading(pid, "cpu_seconds"), 100.0),
            culprit.is_it(pid, ranks.get(pid)),
        )
        for pid in pids
    ]
    rss = [
        Series(
            label(pid),
            [
                None if (v := reading(pid, "rss_bytes")(s)) is None else round(v / 2**20, 1)
                for s in samples
            ],
            culprit.is_it(pid, ranks.get(pid)),
        )
        for pid in pids
    ]
    return [
        Chart("cpu", _("CPU per process (100% = one core)"), "%", x, cpu),
        Chart("rss", _("Memory (RSS) per process"), "MiB", x, rss),
    ]


def _gpu_charts(samples: list[TimelineSample]) -> list[Chart]:
    devices = sorted({g.index for s in samples for g in s.gpus})
    if not devices:
        return []
    x = [s.elapsed_s for s in samples]

    def values(index: int, name: str, scale: float) -> list[float | None]:
        out: list[float | None] = []
        for sample in samples:
            gpu = next((g for g in sample.gpus if g.index == index), None)
            value = getattr(gpu, name) if gpu is not None else None
            out.append(None if value is None else round(value / scale, 2))
        return out

    charts = []
    if any(g.utilization_percent is not None for s in samples for g in s.gpus):
        charts.append(
            Chart(
                "gpu_util",
                _("GPU utilisation per device"),
                "%",
                x,
                [
                    Series(_("GPU {index}", index=i), values(i, "utilization_percent", 1.0))
                    for i in devices
                ],
            )
        )
    if any(g.memory_used_bytes is not None for s in samples for g in s.gpus):
        charts.append(
            Chart(
                "gpu_memory",
                _("GPU memory used per device"),
                "GiB",
                x,
                [
                    Series(_("GPU {index}", index=i), values(i, "memory_used_bytes", 2**30))
                    for i in devices
                ],
            )
        )
    return charts


def build_timeline(report: Report, bundle: Bundle | None) -> Timeline:
    """The charts of the job's timeline (`hangdoctor run` only: a dump has no timeline)."""
    if bundle is None or bundle.job is None or not bundle.job.timeline:
        return Timeline(charts=[])
    samples = _thin(bundle.job.timeline)
    culprit = _Culprit(report)
    charts = [
        *_progress_charts(samples, report, culprit),
        *_process_charts(samples, report, culprit),
        *_gpu_charts(samples),
    ]
    return Timeline(
        charts=charts,
        last_progress_s=bundle.job.last_progress_s,
        declared_s=bundle.job.hang_declared_s,
        samples=len(bundle.job.timeline),
    )
