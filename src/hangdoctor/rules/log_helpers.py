"""What several log rules share: the lines they read (the job's output, the kernel log), the
matches of given kinds in them, and those matches cited as evidence, clipped and without
repeats (their examples are log-only bundles, in each family's `examples.toml`)."""

from __future__ import annotations

from collections.abc import Iterable

from hangdoctor.analysis.frames import innermost_user_frame, short_location
from hangdoctor.analysis.job import JobView
from hangdoctor.analysis.job_output import job_output
from hangdoctor.analysis.logs import SIGNAL_NAMES, LogKind, LogMatch, scan
from hangdoctor.analysis.ranks import distributed_call
from hangdoctor.analysis.tracebacks import Raised, fault_stack, main_thread_stack
from hangdoctor.evidence.model import Frame, JobRecord
from hangdoctor.i18n import N_, _

MAX_EVIDENCE = 6
MAX_LINE = 400
#: Where a cited line was read, as `cite` names it (translated where it is cited).
_SOURCES = (N_("log"), N_("kernel log"))


def output_lines(job: JobView) -> tuple[str, ...]:
    """The job's output, with the uncaught exceptions it did not print whole
    (`analysis.job_output`)."""
    return job_output(job.bundle.job)


def kernel_lines(job: JobView) -> tuple[str, ...]:
    return job.bundle.job.kernel_log if job.bundle.job else ()


def matches_of(job: JobView, *kinds: LogKind, kernel: bool = False) -> list[LogMatch]:
    lines = kernel_lines(job) if kernel else output_lines(job)
    return [m for m in scan(lines) if m.kind in kinds]


def killed_by(signal: int) -> str:
    """How a process that a signal ended is said to have ended: by the signal's name where it
    has one (`killed by SIGKILL`), else by its number; the same words wherever a log names it."""
    name = SIGNAL_NAMES.get(signal)
    if name is None:
        return _("killed by signal {signal}", signal=signal)
    return _("killed by {signal}", signal=name)


def clip(line: str) -> str:
    return line if len(line) <= MAX_LINE else line[: MAX_LINE - 3] + "..."


def cite(
    matches: Iterable[LogMatch],
    where: str = "log",
    limit: int = MAX_EVIDENCE,
) -> list[str]:
    """Evidence lines, one per distinct message, at most `limit`; `where` names the source
    (`log`, `kernel log`: the words of _SOURCES, translated here)."""
    out: list[str] = []
    seen: set[str] = set()
    source = _(where)
    for match in matches:
        if match.line in seen:
            continue
        seen.add(match.line)
        out.append(f"{source}: {clip(match.line)}")
        if len(out) >= limit:
            break
    return out


def raised_words(raised: Raised) -> str:
    """`RuntimeError: rank 1 diverged at train.py:40 in main (`raise ...`)`."""
    where = raised.location
    what, message = raised.short_type, clip(raised.message)
    if where is None:
        return f"{what}: {message}"
    if where.code:
        return _(
            "{type}: {message} at {where} (`{code}`)",
            type=what,
            message=message,
            where=short_location(where),
            code=where.code,
        )
    return _(
        "{type}: {message} at {where}", type=what, message=message, where=short_location(where)
    )


#: When a process was stopped, as `stopped_at` says it (translated there).
_WHEN = {
    "sigterm": N_("when the job stopped it (SIGTERM)"),
    "peer_timeout": N_("when a peer's collective timed out"),
}
_WHEN_FAILED = N_("as the job failed")


def _pid_of(record: JobRecord, rank: int | None, pid: int | None) -> int | None:
    """The pid given, else the one the instrumentation reported for `rank`."""
    if pid is None and rank is not None:
        return next((s.pid for s in record.progress if s.rank == rank), None)
    return pid


def stopped_at(
    job: JobView, rank: int | None = None, pid: int | None = None
) -> tuple[Frame, str] | None:
    """Where a process of the job was in the user's code as the job failed, and when that
    was: when SIGTERM stopped it (a launcher ending the other ranks after one failed), or when
    a peer's collective timeout appeared in the output; from faulthandler's report of its
    main thread. The process is named by pid, or by rank (instrumentation)."""
    record = job.record
    if record is None:
        return None
    pid = _pid_of(record, rank, pid)
    stopped = next((s for s in record.stopped if s.pid == pid), None) if pid is not None else None
    frame = innermost_user_frame(main_thread_stack(stopped.text)) if stopped else None
    if stopped is None or frame is None:
        return None
    return frame, _(_WHEN.get(stopped.when or "", _WHEN_FAILED))


def collective_when_stopped(
    job: JobView, rank: int | None = None, pid: int | None = None
) -> str | None:
    """The torch.distributed call the process's main thread was in when the job stopped it
    (from faulthandler's report), or None: a rank found there had reached the collective,
    only too late for a peer that gave up."""
    record = job.record
    if record is None:
        return None
    pid = _pid_of(record, rank, pid)
    stopped = next((s for s in record.stopped if s.pid == pid), None) if pid is not None else None
    return distributed_call(main_thread_stack(stopped.text), idle=True) if stopped else None


def stopped_outside_collectives(job: JobView) -> list[tuple[int, Frame]]:
    """(rank, user line) of each rank that SIGTERM stopped while it was in the user's code and
    in no collective: when a peer gave up waiting in a collective, such a rank is the one it
    waited for (it was still busy before the collective)."""
    record = job.record
    if record is None:
        return []
    ranks = {s.pid: s.rank for s in record.progress if s.rank is not None}
    found = []
    for stopped in record.stopped:
        rank = ranks.get(stopped.pid)
        frames = main_thread_stack(stopped.text)
        frame = innermost_user_frame(frames)
        # A frame at a module's top level only (`main()` on the last line) is a rank on its
        # way out (raising, exiting), not one busy with work of its own.
        if (
            rank is not None
            and frame is not None
            and frame.function != "<module>"
            and distributed_call(frames, idle=True) is None
        ):
            found.append((rank, frame))
    return sorted(found, key=lambda found: found[0])


def fault_of(
    job: JobView, rank: int | None = None, pid: int | None = None
) -> tuple[str | None, Frame | None]:
    """What killed a process of the job by a fatal signal and its innermost user frame then,
    from faulthandler's report; the process is named by pid, or by rank (instrumentation)."""
    record = job.record
    if record is None:
        return None, None
    pid = _pid_of(record, rank, pid)
    faults = (
        [f for f in record.faults if f.pid == pid] if pid is not None else list(record.faults)
    )  # not told which: the first that shows the user's code
    for fault in faults:
        what, frames = fault_stack(fault.text)
        frame = innermost_user_frame(frames)
        if frame is not None or pid is not None:
            return what, frame or (frames[0] if frames else None)
    return None, None
