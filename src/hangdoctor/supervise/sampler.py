"""The light sampler: about once a second, CPU, memory and state of every process of the job,
GPU utilisation and memory where NVML is there, and the training progress the job reports.
Cheap enough to run all the time; its timeline goes into the evidence bundle. It runs on the
supervision loop, so it reads only what cannot block: /proc/PID/stat and statm (no lock of the
target's memory map is taken for them), the progress files, and the GPU readings that the NVML
thread last took (`probes.gpu`)."""

from __future__ import annotations

import contextlib
import time
from collections import deque
from pathlib import Path

import psutil

from hangdoctor.evidence.model import (
    ProbeError,
    ProcessSample,
    ProgressStatus,
    TimelineSample,
)
from hangdoctor.probes.gpu import GpuSampler
from hangdoctor.probes.job_stacks import remove_stale
from hangdoctor.probes.progress import read_statuses

_MAX_SAMPLES = 900  # the last 15 minutes at one sample a second
_CLEANUP_EVERY_S = 30.0  # stack files of exited processes (probes.job_stacks) go this often


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
        processes = []
        for process in self._tree():
            with contextlib.suppress(psutil.Error), process.oneshot():
                cpu = process.cpu_times()
                processes.append(ProcessSample(
                    pid=process.pid,
                    ppid=process.ppid(),
                    cpu_seconds=cpu.user + cpu.system,
                    rss_bytes=process.memory_info().rss,
                    state=process.status(),
                ))
        if self.status_dir is not None:
            self.statuses = read_statuses(self.status_dir)
            if time.monotonic() >= self._next_cleanup:
                remove_stale(self.status_dir)
                self._next_cleanup = time.monotonic() + _CLEANUP_EVERY_S
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
        )
        self.timeline.append(sample)
        return sample

    def live_pids(self) -> list[int]:
        """The job's processes at the last sample."""
        return [p.pid for p in self.timeline[-1].processes] if self.timeline else []

    def refresh_progress(self) -> None:
        """Read the progress files once more: a job writes its last counts as it exits, after
        the last sample."""
        if self.status_dir is not None:
            self.statuses = read_statuses(self.status_dir)

    def cpu_cores_used(self, window_s: float = 3.0) -> float | None:
        """CPU cores the job used over about the last `window_s` seconds."""
        if len(self.timeline) < 2:
            return None
        last = self.timeline[-1]
        recent = [s for s in self.timeline if last.elapsed_s - s.elapsed_s <= window_s]
        first = recent[0] if len(recent) > 1 else self.timeline[-2]
        span = last.elapsed_s - first.elapsed_s
        if span <= 0:
            return None
        before = {p.pid: p.cpu_seconds for p in first.processes if p.cpu_seconds is not None}
        used = sum(
            p.cpu_seconds - before[p.pid]
            for p in last.processes
            if p.cpu_seconds is not None and p.pid in before
        )
        return max(0.0, used / span)

    def runnable(self) -> bool:
        """Whether a process of the job was runnable (state R) at the last sample: it computes,
        even when a loaded machine gives it little of a core."""
        if not self.timeline:
            return False
        return any(p.state == psutil.STATUS_RUNNING for p in self.timeline[-1].processes)

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
        return [p.pid for p in last.processes
                if p.cpu_seconds is not None and p.pid in before
                and (p.cpu_seconds - before[p.pid]) / span > cores]

    def close(self) -> None:
        """Release the GPU library."""
        self.gpus.close()
