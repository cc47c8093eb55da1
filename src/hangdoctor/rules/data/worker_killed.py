"""HD202 data.worker_killed: A DataLoader worker died; the signal says why."""

from __future__ import annotations

from collections.abc import Iterable

from hangdoctor.analysis.frames import in_function, innermost_user_frame, short_location
from hangdoctor.analysis.job import JobView
from hangdoctor.analysis.logs import LogKind
from hangdoctor.analysis.tracebacks import Raised, tracebacks
from hangdoctor.evidence.model import Frame
from hangdoctor.i18n import _
from hangdoctor.rules.base import Rule
from hangdoctor.rules.confidence import Confidence
from hangdoctor.rules.finding import Culprit, Finding, Location
from hangdoctor.rules.log_helpers import fault_of, matches_of, output_lines
from hangdoctor.taxonomy import Category

_LOST_HANDOVER = (
    "ConnectionResetError",
    "ConnectionRefusedError",
    "EOFError",
    "BrokenPipeError",
    "FileNotFoundError",
)


def _lost_handover(raised: Raised) -> bool:
    """The main process failed while receiving a batch from a worker: the worker passes each
    tensor's storage as a descriptor through multiprocessing's resource sharer (or a shared
    file), and when it dies before the main process has fetched it, the fetch fails with a
    connection error instead of PyTorch's "worker ... is killed" message."""
    frames = raised.frames
    return (
        raised.short_type in _LOST_HANDOVER
        and in_function(
            frames, "torch/utils/data/dataloader.py", {"_try_get_data", "_get_data", "_next_data"}
        )
        and (
            in_function(frames, "multiprocessing/resource_sharer.py", {"get_connection", "detach"})
            or in_function(
                frames,
                "torch/multiprocessing/reductions.py",
                {"rebuild_storage_fd", "rebuild_storage_filename"},
            )
        )
    )


class WorkerKilled(Rule):
    """a DataLoader worker process died

    Fires when: a DataLoader worker died (`run`, from the job's output and the kernel log): SIGBUS
    from a full `/dev/shm`, SIGKILL from the OOM killer, or an error lost in the worker

    Why: A DataLoader worker that dies takes the batches it was preparing with it, and the error
    inside it is lost because it ran in a subprocess. SIGBUS means `/dev/shm`, through which workers
    pass tensors, was full; SIGKILL almost always means the kernel's OOM killer or a container
    memory limit. The training loop fails, or waits, far from the real cause.

    Instead: Give the job enough shared memory (`docker run --shm-size=16g`, `--ipc=host`) or use
    `torch.multiprocessing.set_sharing_strategy("file_system")`; lower host memory use (fewer
    workers, a smaller `prefetch_factor`, no copy of a large Python dataset per worker); rerun with
    `num_workers=0` to see an error raised in the dataset code.
    """

    id = "HD202"
    category = Category.DATA_WORKER_KILLED
    reads = "capture"
    specificity = 80
    # A worker that died while its batch was fetched is not named in the error: its pid is
    # known only when `run`'s timeline saw it leave.
    names_culprit = False

    def check(self, job: JobView) -> Iterable[Finding]:
        matches = matches_of(job, LogKind.WORKER_KILLED, LogKind.WORKER_EXITED)
        if not matches:
            lost = next((r for r in tracebacks(output_lines(job)) if _lost_handover(r)), None)
            if lost is not None:
                yield self._handover(lost, self._gone_worker(job))
            return
        best = next((m for m in matches if m.kind == LogKind.WORKER_KILLED), matches[0])
        oom = [
            m
            for m in matches_of(job, LogKind.OOM_KILLED, kernel=True)
            if set(m.pids) & set(best.pids)
        ]
        signal_name = (best.detail or "").strip()
        explanation, fixes = _why(signal_name, oom=bool(oom))
        # The in-job hooks keep faulthandler armed in each worker: a worker that died of a fatal
        # signal left its Python stack, so the line of the dataset code it died at is known.
        fatal, crashed_at = fault_of(job, pid=best.pids[0]) if best.pids else (None, None)
        died_at: list[str] = []
        if crashed_at is not None:
            where = short_location(crashed_at)
            explanation = _(
                "{explanation} Python's faulthandler saw it die ({fatal}) at {where}: the call "
                "made there crashed in native code (a bad pointer or buffer, a C extension).",
                explanation=explanation,
                fatal=fatal or signal_name or _("fatal signal"),
                where=where,
            )
            code = f" `{crashed_at.code}`" if crashed_at.code else ""
            died_at.append(
                _(
                    "faulthandler: worker pid {pid} died at {where}{code}",
                    pid=best.pids[0],
                    where=where,
                    code=code,
                )
            )
            fixes = (
                _(
                    "At {where}: check what this call is given for the record that crashed "
                    "(a null or freed pointer, a buffer shorter than the size passed, a "
                    "tensor that is not contiguous); reproduce with num_workers=0 under "
                    "`python -X faulthandler`.",
                    where=where,
                ),
                *fixes,
            )
        evidence = [*died_at, *(_("job output: {line}", line=m.line) for m in matches[:3])]
        evidence += [_("kernel log: {line}", line=m.line) for m in oom[:2]]
        yield self.finding(
            confidence=Confidence.CERTAIN,
            title=_(
                "DataLoader worker pid {pids} died ({signal})",
                pids=", ".join(map(str, best.pids)),
                signal=signal_name,
            )
            if signal_name
            else _("DataLoader worker pid {pids} died", pids=", ".join(map(str, best.pids))),
            explanation=explanation,
            culprit=Culprit(
                pid=best.pids[0] if best.pids else None,
                role="dataloader_worker",
                location=Location.of(crashed_at or _loop_line(job)),
            ),
            evidence=tuple(evidence),
            fixes=fixes,
        )

    @staticmethod
    def _gone_worker(job: JobView) -> int | None:
        """A process that left the job's tree while it ran, not its root (`run`'s timeline):
        the worker that died."""
        root = job.bundle.target_pid
        return next((v.pid for v in job.vanished if v.pid != root and v.ppid is not None), None)

    def _handover(self, raised: Raised, pid: int | None) -> Finding:
        """A worker died while the main process fetched a batch from it: which message
        PyTorch prints depends on which noticed first, its SIGCHLD handler or the fetch."""
        user = innermost_user_frame(raised.frames)
        return self.finding(
            confidence=Confidence.LIKELY,
            title=_(
                "A DataLoader worker died while handing a batch over ({type})",
                type=raised.short_type,
            ),
            explanation=_(
                "The main process was receiving a batch's tensors from a worker "
                "(passed as file descriptors through multiprocessing's resource "
                "sharer) when that worker went away, so the fetch failed with "
                "{type} before PyTorch could report the worker's death. "
                "A worker killed mid-epoch is usually the OOM killer (SIGKILL) or a "
                "crash in the dataset code.",
                type=raised.short_type,
            ),
            culprit=Culprit(pid=pid, role="dataloader_worker", location=Location.of(user)),
            evidence=(
                _("job output: {line}", line=raised.type + ": " + raised.message),
                _(
                    "the traceback passes through DataLoader._try_get_data and "
                    "multiprocessing's resource sharer (a worker's tensor being fetched)"
                ),
            ),
            fixes=(
                _(
                    "Check `dmesg` for `Out of memory: Killed process` and the container's "
                    "memory limit; lower host memory use (fewer workers, smaller "
                    "prefetch_factor)."
                ),
                _("Rerun with num_workers=0 to see an error raised in the dataset code."),
            ),
        )


def _why(signal_name: str, *, oom: bool) -> tuple[str, tuple[str, ...]]:
    """What the worker's signal says (a full /dev/shm, the OOM killer), and the fixes."""
    if signal_name == "Bus error":
        return _(
            "The worker got SIGBUS: tensors are passed from workers through "
            "shared memory (/dev/shm), and it was full."
        ), (
            _(
                "Give the job more shared memory: `docker run --shm-size=16g` (Kubernetes: "
                "an emptyDir with medium: Memory mounted at /dev/shm)."
            ),
            _(
                "Or torch.multiprocessing.set_sharing_strategy('file_system'), or fewer "
                "workers / smaller prefetch_factor."
            ),
        )
    if signal_name == "Killed" or oom:
        return _(
            "The worker got SIGKILL, which in a training job almost always "
            "means the kernel's OOM killer (or a container memory limit)."
        ), (
            _(
                "Lower host memory use: fewer workers, smaller prefetch_factor, avoid "
                "copying the whole dataset into each worker (copy-on-read of Python "
                "lists: use numpy arrays or memory-mapped files)."
            ),
            _(
                "Check `dmesg` for `Out of memory: Killed process`, and the container's "
                "memory limit."
            ),
        )
    return _("The worker died; the error inside it is lost because it happened in a subprocess."), (
        _("Rerun with num_workers=0 to see the error in the main process."),
    )


def _loop_line(job: JobView) -> Frame | None:
    """Where the training loop read the batch the dead worker owed, from the traceback of the
    error PyTorch raised there: the user's line to look at when the worker left no line of
    its own (a SIGKILL, an exit)."""
    for raised in tracebacks(output_lines(job)):
        if "DataLoader worker" in raised.message:
            user = innermost_user_frame(raised.frames)
            if user is not None:
                return user
    return None
