"""JobView: an indexed, read-only view of a bundle that rules query.

The first snapshot is the truth for kernel wait states and stacks (it was read before any
ptrace attach); later snapshots add CPU rates and show whether stacks moved.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cached_property
from typing import Any, TypeVar

from hangdoctor.analysis.rank_sets import spans_text
from hangdoctor.analysis.roles import Role, assign_roles
from hangdoctor.evidence.model import (
    Bundle,
    JobRecord,
    OpenFile,
    ProcessEvidence,
    ProgressStatus,
    SocketEndpoint,
    ThreadEvidence,
)
from hangdoctor.i18n import _

_View = TypeVar("_View")


def reported_ranks(bundle: Bundle) -> dict[int, int]:
    """pid -> rank as the processes said themselves (instrumentation, Flight Recorder)."""
    ranks = {r.pid: r.rank for r in bundle.flight_records if r.rank is not None}
    for status in bundle.job.progress if bundle.job else ():
        if status.rank is not None:
            ranks[status.pid] = status.rank
    return ranks


@dataclass(frozen=True)
class Vanished:
    """A process that left the job's tree while the job ran."""

    pid: int
    ppid: int | None
    last_seen_s: float  # seconds since the job started, at the last sample that saw it


@dataclass(frozen=True)
class PipeEnd:
    """One process's descriptor on a pipe."""

    pid: int
    fd: int
    mode: str | None


class JobView:
    """Read-only queries over a bundle."""

    def __init__(self, bundle: Bundle) -> None:
        self.bundle = bundle
        self.first = bundle.snapshots[0] if bundle.snapshots else None
        self.last = bundle.snapshots[-1] if bundle.snapshots else None
        self._processes = {p.pid: p for p in self.first.processes} if self.first else {}
        self._roles = assign_roles(self._processes, bundle.target_pid, reported_ranks(bundle))
        self._derived: dict[str, Any] = {}

    def derived(self, key: str, build: Callable[[JobView], _View]) -> _View:
        """A view computed once per job and shared by every rule that asks (e.g. the ranks)."""
        if key not in self._derived:
            self._derived[key] = build(self)
        view: _View = self._derived[key]  # each key is always built by the same `build`
        return view

    # processes -----------------------------------------------------------------------------
    @property
    def processes(self) -> list[ProcessEvidence]:
        """Processes as first seen, root first."""
        return list(self._processes.values())

    def process(self, pid: int | None) -> ProcessEvidence | None:
        """The process with this pid, if it was captured."""
        return self._processes.get(pid) if pid is not None else None

    def thread(self, pid: int | None, tid: int | None) -> ThreadEvidence | None:
        """The thread `tid` of process `pid`, as first captured."""
        process = self.process(pid)
        if process is None or tid is None:
            return None
        return next((t for t in process.threads if t.tid == tid), None)

    def role(self, pid: int) -> Role:
        """Its role in the job."""
        return self._roles.get(pid, (Role.OTHER, None))[0]

    def rank(self, pid: int) -> int | None:
        """The distributed rank it is or serves, if any."""
        return self._roles.get(pid, (Role.OTHER, None))[1]

    @cached_property
    def _children(self) -> dict[int, list[ProcessEvidence]]:
        index: dict[int, list[ProcessEvidence]] = {}
        for process in self._processes.values():
            if process.ppid is not None:
                index.setdefault(process.ppid, []).append(process)
        return index

    def children(self, pid: int) -> list[ProcessEvidence]:
        """Direct children that were captured."""
        return self._children.get(pid, [])

    def threads(self) -> Iterator[tuple[ProcessEvidence, ThreadEvidence]]:
        """Every (process, thread) pair of the first snapshot."""
        for process in self._processes.values():
            for thread in process.threads:
                yield process, thread

    # samples over time ----------------------------------------------------------------------
    @cached_property
    def _thread_samples(self) -> dict[tuple[int, int], list[tuple[float, ThreadEvidence]]]:
        index: dict[tuple[int, int], list[tuple[float, ThreadEvidence]]] = {}
        for snapshot in self.bundle.snapshots:
            for process in snapshot.processes:
                for thread in process.threads:
                    index.setdefault((process.pid, thread.tid), []).append(
                        (snapshot.elapsed_s, thread)
                    )
        return index

    def samples(self, pid: int, tid: int) -> list[tuple[float, ThreadEvidence]]:
        """(elapsed_s, thread) for every snapshot that saw this thread."""
        return self._thread_samples.get((pid, tid), [])

    def thread_cpu_share(self, pid: int, tid: int) -> float | None:
        """Share of one CPU the thread used between its first and last sample."""
        samples = [(t, s.kernel) for t, s in self.samples(pid, tid) if s.kernel is not None]
        if len(samples) < 2 or samples[-1][0] - samples[0][0] <= 0:
            return None
        used = samples[-1][1].cpu_seconds - samples[0][1].cpu_seconds
        return max(0.0, used / (samples[-1][0] - samples[0][0]))

    @cached_property
    def _process_samples(self) -> dict[int, list[tuple[float, float]]]:
        index: dict[int, list[tuple[float, float]]] = {}
        for snapshot in self.bundle.snapshots:
            for process in snapshot.processes:
                if process.cpu_seconds is not None:
                    index.setdefault(process.pid, []).append(
                        (snapshot.elapsed_s, process.cpu_seconds)
                    )
        return index

    def process_cpu_share(self, pid: int) -> float | None:
        """Share of one CPU the process used between the first and last snapshot."""
        seen = self._process_samples.get(pid, [])
        if len(seen) < 2 or seen[-1][0] - seen[0][0] <= 0:
            return None
        return max(0.0, (seen[-1][1] - seen[0][1]) / (seen[-1][0] - seen[0][0]))

    @cached_property
    def sampled_span_s(self) -> float:
        """Seconds between the first and the last snapshot."""
        if not self.first or not self.last:
            return 0.0
        return self.last.elapsed_s - self.first.elapsed_s

    # files, pipes, sockets -------------------------------------------------------------------
    def open_file(self, pid: int, fd: int) -> OpenFile | None:
        """What descriptor `fd` of `pid` points to."""
        process = self.process(pid)
        if process is None:
            return None
        return next((f for f in process.open_files if f.fd == fd), None)

    @cached_property
    def vanished(self) -> list[Vanished]:
        """Processes the light timeline saw that were gone by its end (and are not in the
        capture): they exited, or were killed, while the job ran."""
        record = self.bundle.job
        if record is None or not record.timeline:
            return []
        last_seen: dict[int, tuple[float, int | None]] = {}
        for sample in record.timeline:
            for process in sample.processes:
                last_seen[process.pid] = (sample.elapsed_s, process.ppid)
        end = record.timeline[-1].elapsed_s
        return sorted(
            (
                Vanished(pid, ppid, seen)
                for pid, (seen, ppid) in last_seen.items()
                if seen < end and pid not in self._processes
            ),
            key=lambda v: v.last_seen_s,
        )

    @property
    def record(self) -> JobRecord | None:
        """The supervised job's record (`hangdoctor run` only)."""
        return self.bundle.job

    def progress_of(self, pid: int) -> ProgressStatus | None:
        """What the instrumented process `pid` last reported about itself, if it did."""
        record = self.record
        return next((s for s in record.progress if s.pid == pid), None) if record else None

    @cached_property
    def _pipe_ends(self) -> dict[str, list[PipeEnd]]:
        index: dict[str, list[PipeEnd]] = {}
        for process in self._processes.values():
            for opened in process.open_files:
                if opened.target.startswith(("pipe:", "socket:")):
                    index.setdefault(opened.target, []).append(
                        PipeEnd(pid=process.pid, fd=opened.fd, mode=opened.mode)
                    )
        return index

    def pipe_ends(self, target: str) -> list[PipeEnd]:
        """Every captured descriptor on the pipe `pipe:[inode]` (or socket `socket:[inode]`)."""
        return self._pipe_ends.get(target, [])

    @cached_property
    def _sockets(self) -> dict[int, SocketEndpoint]:
        return {s.inode: s for s in self.bundle.sockets}

    def socket(self, target: str) -> SocketEndpoint | None:
        """The endpoint behind `socket:[inode]`, if it was found."""
        if not target.startswith("socket:["):
            return None
        return self._sockets.get(int(target[len("socket:[") : -1]))

    # naming ----------------------------------------------------------------------------------
    def describe_process(self, pid: int) -> str:
        """`rank 1 (pid 4242)`, `DataLoader worker of rank 0 (pid 4250)`, `main process (pid 7)`;
        in a job analysed by class, with the processes it stands for (`nodes.classes`)."""
        alone = self._describe_one(pid)
        process = self.process(pid)
        found = process.rank_class if process is not None else None
        if found is None or found.size <= 1:
            return alone
        if found.ranks:
            return _(
                "{process} and {more} more like it (ranks {ranks}, on {nodes} nodes)",
                process=alone,
                more=found.size - 1,
                ranks=spans_text(found.ranks),
                nodes=found.nodes,
            )
        return _(
            "{process} and {more} more like it (on {nodes} nodes)",
            process=alone,
            more=found.size - 1,
            nodes=found.nodes,
        )

    def _describe_one(self, pid: int) -> str:
        role, rank = self.role(pid), self.rank(pid)
        if role is Role.RANK:
            return _("rank {rank} (pid {pid})", rank=rank, pid=pid)
        if role is Role.DATALOADER_WORKER:
            if rank is not None:
                return _("DataLoader worker of rank {rank} (pid {pid})", rank=rank, pid=pid)
            return _("DataLoader worker (pid {pid})", pid=pid)
        if role is Role.MAIN:
            return _("main process (pid {pid})", pid=pid)
        if role is Role.LAUNCHER:
            return _("launcher (pid {pid})", pid=pid)
        process = self.process(pid)
        name = process.name if process and process.name else _("process")
        if process is not None and process.outside_job:
            return _("{name} (pid {pid}), outside the job's tree", name=name, pid=pid)
        return f"{name} (pid {pid})"


def thread_label(thread: ThreadEvidence) -> str:
    """`MainThread (tid 42)`: the Python name when known, else the kernel's."""
    name = (thread.python.name if thread.python else None) or thread.comm or _("thread")
    return f"{name} (tid {thread.tid})"
