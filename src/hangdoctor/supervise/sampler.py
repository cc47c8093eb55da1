"""The light sampler: about once a second, CPU, memory and state of every process of the job,
GPU utilisation and memory where NVML is there, and the training progress the job reports.
Cheap enough to run all the time; its timeline goes into the evidence bundle. It runs on the
supervision loop, so it reads only what cannot block: /proc/PID/stat and statm (no lock of the
target's memory map is taken for them), the progress files, and the GPU readings that the NVML
thread last took (`probes.gpu`)."""

from __future__ import annotations

import itertools
import time
from collections import deque
from pathlib import Path

import psutil

from hangdoctor.analysis.activity import COMPILERS, TreeActivity, tree_activity
from hangdoctor.evidence.model import (
    ProbeError,
    ProcessSample,
    ProgressStatus,
    RankSample,
    TimelineSample,
)
from hangdoctor.probes.gpu import GpuSampler
from hangdoctor.probes.job_stacks import remove_stale
from hangdoctor.probes.procfs import runnable_tasks, usable_cores
from hangdoctor.probes.progress import read_statuses

_MAX_SAMPLES = 900  # the last 15 minutes at one sample a second
_CLEANUP_EVERY_S = 30.0  # stack files of exited processes (probes.job_stacks) go this often


def _only(sample: TimelineSample, pids: set[int] | None) -> TimelineSample:
    """The sample with only these processes (all of them when `pids` is None)."""
    if pids is None:
        return sample
    kept = tuple(p for p in sample.processes if p.pid in pids)
    return sample.model_copy(update={"processes": kept})


def _sample_process(process: psutil.Process) -> ProcessSample | None:
    """One process's cheap readings; None when it has gone. Its I/O counters may be refused
    (another user's process) without losing the rest."""
    try:
        with process.oneshot():
            cpu = process.cpu_times()
            io = _io_counters(process)
            return ProcessSample(
                pid=process.pid,
                ppid=process.ppid(),
                cpu_seconds=cpu.user + cpu.system,
                children_cpu_seconds=cpu.children_user + cpu.children_system,
                rss_bytes=process.memory_info().rss,
                state=process.status(),
                name=process.name(),
                read_chars=getattr(io, "read_chars", None),
                write_chars=getattr(io, "write_chars", None),
                read_bytes=getattr(io, "read_bytes", None),
                write_bytes=getattr(io, "write_bytes", None),
            )
    except psutil.Error:
        return None


def _rank_sample(status: ProgressStatus) -> RankSample:
    return RankSample(
        pid=status.pid,
        rank=status.rank,
        steps=status.steps,
        batches=status.batches,
        collectives=status.collectives,
        data_wait_s=round(status.data_wait_s, 3),
    )


def _with_own_io(
    processes: list[ProcessSample], statuses: list[ProgressStatus]
) -> list[ProcessSample]:
    """Where /proc/PID/io was refused (ptrace refused), the counters the process noted of
    itself in its status."""
    own = {s.pid: s for s in statuses if s.write_chars is not None}
    return [
        p.model_copy(
            update={"write_chars": own[p.pid].write_chars, "read_bytes": own[p.pid].read_bytes}
        )
        if p.write_chars is None and p.pid in own
        else p
        for p in processes
    ]


def _io_counters(process: psutil.Process) -> object | None:
    try:
        return process.io_counters()
    except (psutil.AccessDenied, AttributeError):
        return None


class TreeSampler:
    """Samples the process tree under `root_pid`."""

    def __init__(self, root_pid: int, started: float, status_dir: Path | None) -> None:
        self.root_pid = root_pid
        self.started = started
        self.status_dir = status_dir
        self.timeline: deque[TimelineSample] = deque(maxlen=_MAX_SAMPLES)
        self.statuses: list[ProgressStatus] = []
        self.gpus = GpuSampler()
        self._processes: dict[int, psutil.Process] = {}
        self._next_cleanup = time.monotonic() + _CLEANUP_EVERY_S
        self._cores = usable_cores()

    def _tree(self) -> list[psutil.Process]:
        try:
            root = self._processes.get(self.root_pid) or psutil.Process(self.root_pid)
            current = [root, *root.children(recursive=True)]
        except psutil.Error:
            return []
        # Keep the Process objects: psutil caches what it can on them.
        self._processes = {p.pid: self._processes.get(p.pid, p) for p in current}
        return list(self._processes.values())

    def sample(self, output_bytes: int) -> TimelineSample:
        """Take one sample and append it to the timeline."""
        processes = [
            sampled for process in self._tree() if (sampled := _sample_process(process)) is not None
        ]
        if self.status_dir is not None:
            self.statuses = read_statuses(self.status_dir)
            if time.monotonic() >= self._next_cleanup:
                remove_stale(self.status_dir)
                self._next_cleanup = time.monotonic() + _CLEANUP_EVERY_S
            processes = _with_own_io(processes, self.statuses)
        sample = TimelineSample(
            elapsed_s=round(time.monotonic() - self.started, 3),
            output_bytes=output_bytes,
            processes=tuple(processes),
            gpus=self.gpus.sample(),
            steps=sum(s.steps for s in self.statuses),
            batches=sum(s.batches for s in self.statuses),
            collectives=sum(s.collectives for s in self.statuses),
            losses=sum(s.losses_seen for s in self.statuses),
            nonfinite_losses=sum(s.nonfinite_losses for s in self.statuses),
            heartbeats=sum(s.heartbeats for s in self.statuses),
            phase_moves=sum(s.phase_moves for s in self.statuses),
            runnable_tasks=runnable_tasks(),
            cores=self._cores,
            ranks=tuple(_rank_sample(s) for s in self.statuses),
        )
        self.timeline.append(sample)
        return sample

    def compiler_pids(self) -> list[int]:
        """The job's compiler processes at the last sample (they have no Python stack)."""
        if not self.timeline:
            return []
        return [
            p.pid for p in self.timeline[-1].processes if p.name is not None and p.name in COMPILERS
        ]

    def live_pids(self) -> list[int]:
        """The job's processes at the last sample."""
        return [p.pid for p in self.timeline[-1].processes] if self.timeline else []

    def refresh_progress(self) -> None:
        """Read the progress files once more: a job writes its last counts as it exits, after
        the last sample."""
        if self.status_dir is not None:
            self.statuses = read_statuses(self.status_dir)

    def activity(self, window_s: float = 3.0, *, training: bool = False) -> TreeActivity | None:
        """What the whole tree did over about the last `window_s` seconds: CPU of processes
        that came and went included, I/O beyond the job's output, compilers seen. With
        `training`, only what the training processes and their descendants did."""
        if len(self.timeline) < 2:
            return None
        last = self.timeline[-1]
        recent = [s for s in self.timeline if last.elapsed_s - s.elapsed_s <= window_s]
        window = recent if len(recent) > 1 else [self.timeline[-2], last]
        if training:
            window = [_only(sample, self.training_pids()) for sample in window]
        return tree_activity(window)

    def moved_at_s(self, window_s: float = 3.0) -> float | None:
        """When the tree last read or wrote data, if it moved data at the rate of real work
        over about the last `window_s` seconds: the end of the last sample interval that moved
        any. Not the time it is asked: a job whose last write came 3 s ago has been quiet
        3 s, not 0 (issue 27: a hang declared within S + 2 s of its last progress)."""
        activity = self.activity(window_s)
        if activity is None or not activity.moving_data:
            return None
        last = self.timeline[-1]
        recent = [s for s in self.timeline if last.elapsed_s - s.elapsed_s <= window_s]
        pairs = list(itertools.pairwise(recent)) or [(self.timeline[-2], last)]
        for before, after in reversed(pairs):
            step = tree_activity([before, after])
            if step is not None and step.io_bytes_per_s > 0:
                return after.elapsed_s
        return last.elapsed_s

    @property
    def sampled_at_s(self) -> float | None:
        """When the last sample was taken (seconds since the supervisor started)."""
        return self.timeline[-1].elapsed_s if self.timeline else None

    def runnable(self, *, training: bool = False) -> bool:
        """Whether a process of the job (with `training`, a training process or one of its
        descendants) was runnable (state R) at the last sample: it computes, even when a
        loaded machine gives it little of a core."""
        if not self.timeline:
            return False
        wanted = self.training_pids() if training else None
        return any(
            p.state == psutil.STATUS_RUNNING
            for p in self.timeline[-1].processes
            if wanted is None or p.pid in wanted
        )

    def training_pids(self) -> set[int] | None:
        """The processes that do the training work (they reported steps, batches or
        collectives) and their descendants; None when none has reported any: then the whole
        tree counts. A framework's daemons (Ray's raylet and monitors, a launcher) are no
        descendants of its ranks, and their CPU is not the job's work (issue 27)."""
        working = {
            s.pid for s in self.statuses if s.steps or s.batches or s.collectives or s.heartbeats
        }
        if not working or not self.timeline:
            return None
        children: dict[int, list[int]] = {}
        for process in self.timeline[-1].processes:
            if process.ppid is not None:
                children.setdefault(process.ppid, []).append(process.pid)
        found = set(working)
        todo = list(working)
        while todo:
            for child in children.get(todo.pop(), ()):
                if child not in found:
                    found.add(child)
                    todo.append(child)
        return found

    def gaps(self) -> tuple[ProbeError, ...]:
        """What the sampler could not observe, for the report (a wedged or missing NVML)."""
        gap = self.gpus.gap()
        return (gap,) if gap is not None else ()

    def busy_pids(self, window_s: float, cores: float) -> list[int]:
        """Processes that used more than `cores` CPU cores over about the last `window_s`."""
        if len(self.timeline) < 2:
            return []
        last = self.timeline[-1]
        recent = [s for s in self.timeline if last.elapsed_s - s.elapsed_s <= window_s]
        first = recent[0] if len(recent) > 1 else self.timeline[-2]
        span = last.elapsed_s - first.elapsed_s
        if span <= 0:
            return []
        before = {p.pid: p.cpu_seconds for p in first.processes if p.cpu_seconds is not None}
        return [
            p.pid
            for p in last.processes
            if p.cpu_seconds is not None
            and p.pid in before
            and (p.cpu_seconds - before[p.pid]) / span > cores
        ]

    def close(self) -> None:
        """Release the GPU library."""
        self.gpus.close()
