"""One capture of a live process tree: a few snapshots, each /proc first, then the GPUs (NVML),
then stacks. Sampling the GPUs at every snapshot lets `dump` tell a GPU that stays busy behind a
waiting host (a kernel that never ends) from one that went idle."""

from __future__ import annotations

import functools
import os
import time
from collections import defaultdict
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field

import psutil

from hangdoctor import __version__, bounded
from hangdoctor.errors import NoSuchProcessError
from hangdoctor.evidence.model import (
    Bundle,
    Frame,
    GpuSample,
    ProbeError,
    ProcessEvidence,
    PythonThread,
    Snapshot,
    ThreadEvidence,
)
from hangdoctor.i18n import _
from hangdoctor.probes.code_review import review
from hangdoctor.probes.fd_holders import outside_holders
from hangdoctor.probes.gpu import GpuSampler
from hangdoctor.probes.procfs import process_tree, read_process
from hangdoctor.probes.pystacks import (
    NATIVE_PROBE,
    StackOptions,
    dump_stacks,
    find_py_spy,
    py_spy_version,
)
from hangdoctor.probes.sockets import read_sockets, socket_inodes
from hangdoctor.probes.sources import qualified_name, with_source
from hangdoctor.probes.system import read_system

# A process is sampled again for stacks when it used this share of a CPU since the last snapshot.
_BUSY_CPU_SHARE = 0.2
_PROCFS_TIMEOUT_S = 15.0  # reading one process's /proc files (slow only on a loaded host)
_SOURCES_TIMEOUT_S = 5.0  # reading the source files of one process's frames


@dataclass(frozen=True)
class CaptureOptions:
    """How much to capture."""

    samples: int = 2
    interval_s: float = 0.5
    stacks: StackOptions = field(default_factory=StackOptions)


class _Timer:
    """Adds up the time spent per probe, for the bundle and the benchmark."""

    def __init__(self) -> None:
        self.totals: dict[str, float] = defaultdict(float)

    @contextmanager
    def measure(self, name: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.totals[name] += time.perf_counter() - start


def _absolute(frame: Frame, cwd: str | None) -> Frame:
    if frame.native or os.path.isabs(frame.file) or frame.file.startswith("<") or not cwd:
        return frame
    return frame.model_copy(update={"file": os.path.normpath(os.path.join(cwd, frame.file))})


def _with_stacks(process: ProcessEvidence, stacks: dict[int, PythonThread]) -> ProcessEvidence:
    threads = []
    main = stacks.get(process.pid)
    if main is not None and main.name is None:
        # py-spy reads names from the threading module, which a script may never import.
        stacks[process.pid] = main.model_copy(update={"name": "MainThread"})
    for thread in process.threads:
        python = stacks.pop(thread.tid, None)
        threads.append(thread.model_copy(update={"python": python}) if python else thread)
    # Threads py-spy saw that /proc no longer lists (they started or ended in between).
    threads.extend(ThreadEvidence(tid=tid, python=python) for tid, python in stacks.items())
    return process.model_copy(update={"threads": tuple(threads), "stacks_sampled": True})


def _enrich(stacks: dict[int, PythonThread], cwd: str | None) -> dict[int, PythonThread]:
    return {
        tid: thread.model_copy(
            update={"frames": tuple(with_source(_absolute(f, cwd)) for f in thread.frames)}
        )
        for tid, thread in stacks.items()
    }


def _enrich_bounded(
    stacks: dict[int, PythonThread], process: ProcessEvidence, errors: list[ProbeError]
) -> dict[int, PythonThread]:
    """Source lines for the frames, read from the job's files, which may sit on a network mount
    that no longer answers: past the limit the frames are kept without their source."""
    enriched, failure = bounded.call(
        "sources",
        functools.partial(_enrich, stacks, process.cwd),
        _SOURCES_TIMEOUT_S,
        pid=process.pid,
    )
    if enriched is None:
        errors.append(
            failure
            or ProbeError(probe="sources", pid=process.pid, kind="failed", message=_("no result"))
        )
        return stacks
    return enriched


def _qualified(frame: Frame) -> Frame:
    """faulthandler names a frame by its function alone (`wait`); py-spy, and the rules, by
    its qualified name (`Event.wait`), which the source file gives."""
    if frame.native or frame.line <= 0:
        return frame
    name = qualified_name(frame.file, frame.line, frame.function)
    return frame if name == frame.function else frame.model_copy(update={"function": name})


def attach_stacks(process: ProcessEvidence, stacks: dict[int, PythonThread]) -> ProcessEvidence:
    """`process` with Python stacks read some other way than py-spy (the job's own dump),
    placed on their threads with their source lines and py-spy's qualified names."""
    enriched = _enrich(dict(stacks), process.cwd)
    named = {
        tid: thread.model_copy(update={"frames": tuple(_qualified(f) for f in thread.frames)})
        for tid, thread in enriched.items()
    }
    return _with_stacks(process, named)


def busy(process: ProcessEvidence, before: ProcessEvidence | None, elapsed: float) -> bool:
    """Whether the process computed since `before` (a runnable thread, or CPU used): its
    stacks are worth reading again."""
    if any(t.kernel is not None and t.kernel.state == "R" for t in process.threads):
        return True
    if before is None or process.cpu_seconds is None or before.cpu_seconds is None:
        return False
    return (process.cpu_seconds - before.cpu_seconds) >= _BUSY_CPU_SHARE * max(elapsed, 1e-3)


def _job_pids(root_pid: int, also: tuple[int, ...]) -> list[int]:
    """The root's tree, then the trees of the other roots of the job (each of which may have
    gone); raises psutil.NoSuchProcess for the root."""
    pids = process_tree(root_pid)
    for other in also:
        try:
            pids += [pid for pid in process_tree(other) if pid not in pids]
        except psutil.NoSuchProcess:
            continue
    return pids


def _read_all(pids: list[int], errors: list[ProbeError]) -> list[ProcessEvidence]:
    """/proc of each process; one that cannot be read is left out and said to be."""
    processes: list[ProcessEvidence] = []
    # A /proc read can block in the kernel (cmdline and environ wait for the memory map's
    # lock, which a process stuck in a page fault holds): such a process is left out and
    # said to be, the others are read. Several at a time: a big tree has thousands of
    # threads, and the reads wait on the kernel, not on the GIL.
    with ThreadPoolExecutor(max_workers=max(1, min(8, len(pids)))) as pool:
        reads = list(
            pool.map(
                lambda pid: bounded.call(
                    "procfs", functools.partial(read_process, pid), _PROCFS_TIMEOUT_S, pid=pid
                ),
                pids,
            )
        )
    for pid, (read, failure) in zip(pids, reads, strict=True):
        if read is None:
            errors.append(
                failure
                or ProbeError(probe="procfs", pid=pid, kind="failed", message=_("no result"))
            )
            continue
        process, problems = read
        errors.extend(problems)
        if process is not None:
            processes.append(process)
    return processes


def _outside(
    processes: list[ProcessEvidence], known: list[int] | None, errors: list[ProbeError]
) -> tuple[list[ProcessEvidence], list[int]]:
    """The processes outside the job's tree that hold the other end of what it waits on (found
    at the first snapshot, read again at the others), marked as outside the job."""
    if known is None:
        known, failure = bounded.call(
            "fd holders", functools.partial(outside_holders, processes), _PROCFS_TIMEOUT_S
        )
        if known is None:
            if failure is not None:
                errors.append(failure)
            known = []
    found = _read_all([pid for pid in known if pid not in {p.pid for p in processes}], errors)
    return [p.model_copy(update={"outside_job": True}) for p in found], known


def _take_snapshot(
    root_pid: int,
    also: tuple[int, ...],
    index: int,
    started: float,
    previous: Snapshot | None,
    options: CaptureOptions,
    py_spy: str | None,
    gpus: GpuSampler,
    timer: _Timer,
    errors: list[ProbeError],
    outside: list[list[int]],
) -> Snapshot | None:
    elapsed = time.monotonic() - started
    with timer.measure("process tree"):
        try:
            pids = _job_pids(root_pid, also)
        except psutil.NoSuchProcess:
            errors.append(
                ProbeError(
                    probe="procfs",
                    pid=root_pid,
                    kind="exited",
                    message=_("the process exited during the capture"),
                )
            )
            return None
    with timer.measure("procfs"):
        processes = _read_all(pids, errors)
    with timer.measure("fd holders"):
        found, known = _outside(processes, outside[0] if outside else None, errors)
        processes += found
        outside[:] = [known]
    gpu_samples: tuple[GpuSample, ...] = ()
    if gpus.available:
        with timer.measure("nvml"):
            gpu_samples = gpus.read_now()
    before = {p.pid: p for p in previous.processes} if previous else {}
    since = elapsed - previous.elapsed_s if previous else 0.0
    targets = [
        p
        for p in processes
        if p.is_python is not False and (index == 0 or busy(p, before.get(p.pid), since))
    ]
    with timer.measure("py-spy"):
        workers = max(1, min(8, len(targets)))
        with ThreadPoolExecutor(max_workers=workers) as pool:
            results = list(pool.map(lambda p: dump_stacks(p.pid, py_spy, options.stacks), targets))
    stacks_by_pid: dict[int, dict[int, PythonThread]] = {}
    for process, (stacks, problem) in zip(targets, results, strict=False):
        if problem is not None:
            errors.append(problem)
        if problem is None or problem.probe == NATIVE_PROBE:  # stacks without native frames
            stacks_by_pid[process.pid] = stacks
    with timer.measure("sources"):
        final = [
            _with_stacks(p, _enrich_bounded(stacks_by_pid[p.pid], p, errors))
            if p.pid in stacks_by_pid
            else p
            for p in processes
        ]
    return Snapshot(
        elapsed_s=elapsed, wall_time=time.time(), processes=tuple(final), gpus=gpu_samples
    )


def _dedupe(errors: list[ProbeError]) -> tuple[ProbeError, ...]:
    seen: dict[tuple[str, int | None, str], ProbeError] = {}
    for error in errors:
        seen.setdefault((error.probe, error.pid, error.kind), error)
    return tuple(seen.values())


def capture_tree(
    root_pid: int,
    options: CaptureOptions | None = None,
    gpus: GpuSampler | None = None,
    also: tuple[int, ...] = (),
) -> Bundle:
    """Capture the tree rooted at `root_pid`; raises NoSuchProcessError if there is none.
    `gpus`: an NVML sampler already open (the supervisor's); else one is opened for the capture.
    `also`: roots of further trees of the same job (the other ranks of a job without a
    launcher that could be captured), taken into the same snapshots.
    """
    options = options or CaptureOptions()
    if root_pid <= 0 or not psutil.pid_exists(root_pid):
        raise NoSuchProcessError(_("no process with PID {pid}", pid=root_pid))
    started = time.monotonic()
    timer = _Timer()
    errors: list[ProbeError] = []
    py_spy = find_py_spy()
    own_gpus = gpus is None
    with timer.measure("nvml"):
        sampler = GpuSampler() if gpus is None else gpus
        sampler.wait_opened()
    snapshots: list[Snapshot] = []
    outside: list[list[int]] = []  # the pids found outside the tree at the first snapshot
    try:
        for index in range(max(1, options.samples)):
            if snapshots:
                pause = snapshots[-1].elapsed_s + options.interval_s - (time.monotonic() - started)
                with timer.measure("waiting between samples"):
                    time.sleep(max(0.0, pause))
            snapshot = _take_snapshot(
                root_pid,
                also,
                index,
                started,
                snapshots[-1] if snapshots else None,
                options,
                py_spy,
                sampler,
                timer,
                errors,
                outside,
            )
            if snapshot is None:
                break
            snapshots.append(snapshot)
    finally:
        if sampler.error is not None:
            errors.append(sampler.error)
        if own_gpus:
            sampler.close()
    if not snapshots:
        raise NoSuchProcessError(
            _("process {pid} exited before it could be captured", pid=root_pid)
        )
    with timer.measure("sockets"):
        sockets = read_sockets(root_pid, socket_inodes(snapshots[0].processes))
    with timer.measure("system"):
        system = read_system(py_spy_version(py_spy))
    with timer.measure("code review"):
        code = review(snapshots)
    root = next((p for p in snapshots[0].processes if p.pid == root_pid), None)
    return Bundle(
        tool_version=__version__,
        created_at=time.time(),
        target_pid=root_pid,
        command=root.cmdline if root else (),
        snapshots=tuple(snapshots),
        sockets=tuple(sockets),
        system=system,
        errors=_dedupe(errors),
        timings_s={name: round(value, 4) for name, value in timer.totals.items()},
        code_findings=code.findings,
        code_settings=code.settings,
    )
