"""HD352 distributed.rank_exited: A rank died and the job ended with it: torchrun's failure summary
(or its agent's `failed (exitcode: ...)` line, or torch.multiprocessing.spawn's) names the first
rank that failed and how."""

from __future__ import annotations

import signal
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from hangdoctor.analysis.frames import short_location
from hangdoctor.analysis.job import JobView
from hangdoctor.analysis.logs import LogKind, RankFailure, torchrun_failures
from hangdoctor.analysis.tracebacks import (
    Raised,
    first_failure,
    first_raised,
    is_consequence,
    tracebacks,
)
from hangdoctor.i18n import N_, _
from hangdoctor.rules._failure_rule import EXCEPTION_FAILURE_RULES
from hangdoctor.rules._log_rule import LogRule
from hangdoctor.rules.base import Deferral
from hangdoctor.rules.confidence import Confidence
from hangdoctor.rules.distributed._logs import capital, exit_text, rank_name, ranks_text
from hangdoctor.rules.distributed._ranks import early_exit
from hangdoctor.rules.finding import Culprit, Finding, Location, Severity
from hangdoctor.rules.log_helpers import (
    MAX_EVIDENCE,
    cite,
    clip,
    fault_of,
    matches_of,
    output_lines,
    raised_words,
)
from hangdoctor.taxonomy import Category

_SUMMARY = """torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
============================================================
train.py FAILED
------------------------------------------------------------
Failures:
  <NO_OTHER_FAILURES>
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2026-03-01_10:21:07
  host      : gpu-node-17
  rank      : {rank} (local_rank: {rank})
  exitcode  : {code} (pid: 48213)
  error_file: <N/A>
  traceback : {cause}
============================================================"""

_SIGNAL_ADVICE = {
    9: (
        N_(
            "SIGKILL is almost always the kernel's OOM killer or the job scheduler (a memory limit, "
            "a preemption, a wall-clock limit)."
        ),
        N_(
            "Check `dmesg` (or `journalctl -k`) for `Out of memory: Killed process` with this pid, "
            "and the scheduler's log; lower host memory use per rank (fewer DataLoader workers, "
            "memory-mapped datasets, no full copy of the dataset per rank)."
        ),
    ),
    6: (
        N_(
            "SIGABRT means the process aborted itself: an uncaught C++ exception (a CUDA or NCCL "
            "error), a failed assertion, or NCCL's watchdog taking the process down."
        ),
        N_(
            "Look above the summary in the log for `terminate called after throwing`, a CUDA error "
            "or an NCCL error from this rank; rerun with TORCH_SHOW_CPP_STACKTRACES=1."
        ),
    ),
    11: (
        N_(
            "SIGSEGV is a crash in native code: a C/C++/CUDA extension, or libraries that do not "
            "match each other."
        ),
        N_(
            "Rerun with `python -X faulthandler` (or PYTHONFAULTHANDLER=1) to get the Python stack "
            "at the crash, and check that extensions were built for the installed torch."
        ),
    ),
    7: (
        N_("SIGBUS in a training job nearly always means /dev/shm (shared memory) is full."),
        N_(
            "Give the job more shared memory: `docker run --shm-size=16g` (Kubernetes: an emptyDir "
            "with medium: Memory at /dev/shm), or fewer DataLoader workers."
        ),
    ),
    15: (
        N_(
            "SIGTERM means something asked it to stop: the scheduler (preemption, time limit), a "
            "user, or torchrun after another rank failed."
        ),
        N_(
            "Check the scheduler's log for a preemption or time limit, and the log for a rank that "
            "failed before this one."
        ),
    ),
}


# DDP's reducer, when a step left some parameters without a gradient on this rank:
# https://github.com/pytorch/pytorch/blob/main/torch/csrc/distributed/c10d/reducer.cpp
_UNUSED_PARAMETERS = "Expected to have finished reduction in the prior iteration"
_UNUSED_PARAMETERS_FIX = N_(
    "DDP's message means that in the previous step some parameters got no gradient on this "
    "rank: forward took a branch (a router, a modality switch, a skipped head) that left a "
    "sub-module out, so the ranks disagreed on what to all-reduce. Use every parameter on "
    "every rank each step (for example add `0 * unused_head(x).sum()` to the loss), or pass "
    "`DistributedDataParallel(..., find_unused_parameters=True)` (slower); "
    "TORCH_DISTRIBUTED_DEBUG=DETAIL names the parameters."
)


@dataclass(frozen=True)
class _Left:
    rank: int
    pid: int
    last_seen_s: float


def _left_first(job: JobView, failed_rank: int | None) -> _Left | None:
    """The rank whose process the timeline saw disappear first (a rank that returned or broke
    out early, exit code 0, leaves no message), other than the one that failed."""
    record = job.record
    if record is None:
        return None
    exits = sorted(
        (s.exiting_at, s)
        for s in record.progress
        if s.rank is not None and s.exiting_at is not None
    )
    failed_exit = next((t for t, s in exits if s.rank == failed_rank), None)
    first = next(((t, s) for t, s in exits if s.rank != failed_rank), None)
    if first is not None and (failed_exit is None or first[0] < failed_exit):
        _when, status = first
        assert status.rank is not None
        return _Left(
            rank=status.rank, pid=status.pid, last_seen_s=round(first[0] - record.started_at, 3)
        )
    ranks = {s.pid: s.rank for s in record.progress if s.rank is not None}
    gone = [v for v in job.vanished if v.pid in ranks and ranks[v.pid] != failed_rank]
    failed_seen = next(
        (v.last_seen_s for v in job.vanished if ranks.get(v.pid) == failed_rank), None
    )
    if not gone or (failed_seen is not None and gone[0].last_seen_s >= failed_seen):
        return None
    return _Left(rank=ranks[gone[0].pid], pid=gone[0].pid, last_seen_s=gone[0].last_seen_s)


def _aborted_after_its_own_error(lines: Sequence[str], failure: RankFailure) -> bool:
    """Whether the rank printed an uncaught exception of its own code before it aborted."""
    return failure.rank is not None and any(
        r.rank == failure.rank
        and not r.quoted
        and r.uncaught
        and r.index < failure.index
        and r.unwrapped.in_user_code
        and not is_consequence(r.unwrapped)
        for r in tracebacks(lines)
    )


def _first_failure(failures: list[RankFailure]) -> RankFailure:
    """The failure to explain: torchrun's root cause (else the first listed), unless that rank
    was only ended by SIGTERM while another exited with an error of its own. torchrun sends
    SIGTERM to every rank once one has failed, and its summary orders failures that fall in the
    same second as it pleases (u_ddp_modality_router's rank 0, killed before it could raise,
    was once the "root cause" of rank 1's exception)."""
    first = next((f for f in failures if f.root_cause), None) or min(
        failures, key=lambda f: f.index
    )
    if first.signal != signal.SIGTERM:
        return first
    errored = [f for f in failures if f.signal is None and f.exitcode not in (None, 0)]
    return min(errored, key=lambda f: f.index) if errored else first


def _way_out(job: JobView, pid: int) -> tuple[Location, list[str]] | None:
    """How a rank that left first, without an error, got out of its training loop: the line
    where it called sys.exit() (noted by the instrumentation), else the loop it last
    synchronised in (a collective, or backward(): the instrumentation noted where) and the
    statements that leave that loop before its end. With one, that is where it left; with
    several, the loop's header, and the exits in the evidence."""
    status = job.progress_of(pid)
    if status is not None and status.exit_site is not None:
        site = status.exit_site
        location = Location(file=site.file, line=site.line, function=site.function, code=site.code)
        return location, [_("it called sys.exit() at {where}", where=short_location(site))]
    frames = status.last_sync if status is not None else ()
    looping = next((f for f in reversed(frames) if f.loops), None)  # outermost first
    if looping is None or not looping.loop_exits:
        return None
    evidence = [
        _(
            "its last collective or backward() was at {where}, inside `{loop}`",
            where=short_location(looping),
            loop=looping.loops[0],
        )
    ]
    where, words, only = early_exit(looping)
    evidence.append(_("{exit}: the others went on", exit=words) if only else words)
    return where, evidence


def _job_failed(job: JobView) -> bool:
    """Whether the job ended in failure: a non-zero exit, or (logs alone) unknown."""
    record = job.record
    return record is None or record.exit_code is None or record.exit_code != 0


def _failures(job: JobView, lines: tuple[str, ...]) -> list[RankFailure]:
    """The ranks that failed: torchrun's summary, or without one (Lightning, accelerate, a
    hand-made mp.spawn) the first rank's own traceback in a job that failed, which PyTorch
    prefixes with the rank."""
    failures = torchrun_failures(lines)
    if failures:
        return failures
    raised = first_failure(lines)
    if raised is None or not _job_failed(job):
        return []
    return [
        RankFailure(
            rank=raised.rank,
            local_rank=None,
            exitcode=1,
            pid=None,
            index=raised.index,
            line=lines[raised.index],
        )
    ]


def _first_failed(job: JobView) -> RankFailure | None:
    """The failure to explain (`_first_failure`), if a rank failed."""
    failures = _failures(job, output_lines(job))
    return _first_failure(failures) if failures else None


def _ended_by_a_collective_timeout(job: JobView) -> bool:
    """Whether the first failure is a collective timeout's consequence: NCCL's watchdog aborted
    the rank (SIGABRT), or it raised giving up on a peer, in a job whose collectives timed out."""
    if not matches_of(job, LogKind.NCCL_TIMEOUT, LogKind.GLOO_TIMEOUT):
        return False
    first = _first_failed(job)
    if first is None or first.signal not in (None, signal.SIGABRT):
        return False
    if first.signal == signal.SIGABRT:
        return True
    raised = first_raised(output_lines(job), first.rank) if first.rank is not None else None
    return raised is not None and is_consequence(raised)


def _aborted_on_a_size_mismatch(job: JobView) -> bool:
    """Whether the first failure is gloo's abort (SIGABRT) on a collective size mismatch."""
    first = _first_failed(job)
    return (
        first is not None
        and first.signal == signal.SIGABRT
        and bool(matches_of(job, LogKind.COLLECTIVE_SIZE_MISMATCH))
    )


@dataclass
class _Told:
    """What the finding says about the first failure: its facts, then its words."""

    first: RankFailure
    name: str
    severity: Severity = Severity.ERROR
    confidence: Confidence = Confidence.CERTAIN
    explanation: str = ""
    location: Location | None = None
    raised: Raised | None = None
    evidence: list[str] = field(default_factory=list)
    fixes: list[str] = field(default_factory=list)


def _killed(job: JobView, first: RankFailure, name: str) -> _Told:
    """A rank a signal ended: what the signal usually means, and where faulthandler saw it die."""
    assert first.signal is not None
    told = _Told(first=first, name=name)
    advice = _SIGNAL_ADVICE.get(first.signal)
    if advice is not None:
        told.explanation, fix = _(advice[0]), _(advice[1])
    else:
        told.explanation = _("It was killed by signal {signal}.", signal=first.signal)
        fix = _("Look in the log and `dmesg` for what sent it.")
    told.fixes.append(fix)
    if first.signal == signal.SIGTERM:
        told.severity, told.confidence = Severity.WARNING, Confidence.PLAUSIBLE
    fatal, crashed_at = fault_of(job, rank=first.rank, pid=first.pid)
    if crashed_at is None:
        return told
    told.location = Location.of(crashed_at)
    died = {"fatal": fatal or _("fatal signal"), "where": short_location(crashed_at)}
    told.explanation = _(
        "{explanation} Python's faulthandler saw it die ({fatal}) at {where}.",
        explanation=told.explanation,
        **died,
    )
    told.evidence.append(
        _(
            "faulthandler: {name} died ({fatal}) at {where} `{code}`",
            name=name,
            code=crashed_at.code,
            **died,
        )
        if crashed_at.code
        else _("faulthandler: {name} died ({fatal}) at {where}", name=name, **died)
    )
    return told


def _culprit_rank(
    job: JobView, lines: tuple[str, ...], failures: list[RankFailure], first: RankFailure
) -> tuple[RankFailure, Raised | None, _Left | None]:
    """Who to blame for a rank that exited without a signal, and what it raised: the rank
    itself; or, when it only lost its peer, the rank the timeline saw gone first, which either
    raised an error of its own (that error is the cause, whichever rank the launcher's summary
    happened to put first: both failed within the same instant, the summary's order is a race)
    or left without one (returned or broke out early)."""
    raised = first_raised(lines, first.rank) if first.rank is not None else None
    left = _left_first(job, first.rank) if raised is not None and is_consequence(raised) else None
    own = first_raised(lines, left.rank) if left is not None else None
    if left is None or own is None or is_consequence(own):
        return first, raised, left
    first = next(
        (f for f in failures if f.rank == left.rank),
        RankFailure(
            rank=left.rank,
            local_rank=None,
            exitcode=1,  # an uncaught exception ends Python with 1
            pid=left.pid,
            index=own.index,
            line=lines[own.index],
        ),
    )
    return first, own, None


def _left_early(job: JobView, first: RankFailure, raised: Raised | None, left: _Left) -> _Told:
    """A rank that left the job before the others, without an error: where it got out."""
    told = _Told(
        first=RankFailure(
            rank=left.rank, local_rank=None, exitcode=None, pid=left.pid, index=first.index
        ),
        name=_("rank {rank}", rank=left.rank),
    )
    told.evidence.append(
        _(
            "rank {rank} (pid {pid}) left the job first: last seen {seconds:.1f} s after the "
            "start, before the others failed",
            rank=left.rank,
            pid=left.pid,
            seconds=left.last_seen_s,
        )
    )
    if raised is not None:
        told.evidence.append(
            _(
                "rank {rank} lost its peer ({error})",
                rank=first.rank,
                error=raised_words(raised),
            )
        )
    told.explanation = _(
        "It left the job before the others: no error of its own in the "
        "log, so it most likely returned or broke out of its loop early "
        "(early stopping, an exhausted shard, a `return` on some ranks); "
        "the others failed when their next collective lost it."
    )
    way_out = _way_out(job, left.pid)
    if way_out is not None:
        told.location, found = way_out
        told.evidence += found
    told.fixes.append(
        _(
            "Find the exit path rank {rank} took while the others went "
            "on: every rank must run the same collectives to the end (stop "
            "together: all_reduce a 'stop' flag before breaking out).",
            rank=left.rank,
        )
    )
    return told


def _raised(first: RankFailure, name: str, raised: Raised) -> _Told:
    """A rank that raised an exception (one of its own code gives way to the failure rules, see
    `_died_of_its_own_exception`)."""
    told = _Told(first=first, name=name, raised=raised, location=Location.of(raised.location))
    told.explanation = _(
        "It raised {error} and exited with code {code}.",
        error=raised_words(raised),
        code=first.exitcode,
    )
    told.fixes.append(
        _(
            "Fix the {type} at {where}; the other ranks only lost their peer.",
            type=raised.short_type,
            where=short_location(raised.location) if raised.location else _("its line"),
        )
    )
    if _UNUSED_PARAMETERS in raised.message:
        told.fixes.append(_(_UNUSED_PARAMETERS_FIX))
    return told


def _exited(first: RankFailure, name: str) -> _Told:
    """A rank that exited with an error code and no traceback in the log."""
    told = _Told(first=first, name=name)
    told.explanation = _(
        "It exited with code {code}: a Python exception in "
        "that rank. Its traceback is in the log above the summary (lines "
        "prefixed `[rank{rank}]:`).",
        code=first.exitcode,
        rank=first.rank if first.rank is not None else "N",
    )
    told.fixes.append(
        _(
            "Decorate your entry point with "
            "`@torch.distributed.elastic.multiprocessing.errors.record` so "
            "torchrun's summary carries the exception itself."
        )
    )
    return told


def _own_exception(raised: Raised | None) -> bool:
    """Whether the rank died of an exception of its own code: that exception is the cause, and
    its category (process.exception, or a known error's) the one to name; the failure rules name
    it at its origin, on this rank (see rules/_failure.py)."""
    return raised is not None and raised.in_user_code and not is_consequence(raised)


def _died_of_its_own_exception(job: JobView) -> bool:
    """Whether the first rank that failed died of an exception of its own code: it exited with
    one, or it printed one uncaught and then aborted as the process tore down (a C++ thread
    still running at exit: "terminate called without an active exception"). The exception is
    the cause, which the failure rules name at its origin."""
    lines = output_lines(job)
    failures = _failures(job, lines)
    if not failures:
        return False
    first = _first_failure(failures)
    if first.signal == signal.SIGABRT:
        return _aborted_after_its_own_error(lines, first)
    if first.signal is not None:
        return False
    _culprit, raised, left = _culprit_rank(job, lines, failures, first)
    return left is None and _own_exception(raised)


def _exited_without_signal(
    job: JobView, lines: tuple[str, ...], failures: list[RankFailure], first: RankFailure
) -> _Told:
    """A rank that exited with an error code: what it raised, or that it left first."""
    name = rank_name(first)
    culprit, raised, left = _culprit_rank(job, lines, failures, first)
    if left is not None:
        told = _left_early(job, culprit, raised, left)
    elif raised is not None:
        told = _raised(culprit, name, raised)
    else:
        told = _exited(culprit, name)
    told.confidence = (
        Confidence.STRONG if told.raised is not None or left is not None else Confidence.PLAUSIBLE
    )
    # Its own exception is not a lost connection, while its peers' are: it failed first and the
    # peers' connection errors are the consequence, not the cause.
    prefix = f"[rank{told.first.rank}]:" if told.first.rank is not None else None
    transport = matches_of(job, LogKind.TRANSPORT_ERROR)
    lost = [m for m in transport if prefix and m.line.lstrip().startswith(prefix)]
    if prefix and transport and not lost:
        told.confidence = Confidence.STRONG
        told.explanation = _(
            "{explanation} The other ranks' connection errors followed from it: they "
            "lost their peer.",
            explanation=told.explanation,
        )
    return told


def _evidence(job: JobView, failures: list[RankFailure], told: _Told) -> list[str]:
    """The finding's evidence: the facts found, the launcher's line, the OOM killer's line and
    the ranks that failed after it (and, on the OOM killer's word, a lower confidence)."""
    first = told.first
    evidence = [
        *told.evidence,
        _("log: {line}", line=clip(first.line))
        if first.line
        else _("torchrun: {name} failed", name=told.name),
    ]
    if first.cause and first.cause not in evidence[0]:
        evidence.append(f"torchrun: {first.cause}")
    oom = [
        m
        for m in matches_of(job, LogKind.OOM_KILLED, kernel=True)
        if first.pid is not None and first.pid in m.pids
    ]
    if oom:
        told.explanation = _(
            "{explanation} The kernel log shows the OOM killer ended this very process.",
            explanation=told.explanation,
        )
        evidence += cite(oom, "kernel log", limit=1)
        told.confidence = Confidence.FAIR  # host.memory_exhausted is the better explanation
    other_ranks = [f.rank for f in failures if f is not first and f.rank is not None]
    if other_ranks:
        evidence.append(
            _("torchrun also lists {ranks} as failed after it", ranks=ranks_text(other_ranks))
        )
    if told.raised is not None:
        evidence.insert(
            0,
            _("rank {rank} raised {error}", rank=first.rank, error=raised_words(told.raised)),
        )
    return evidence


def _title(told: _Told, pid: str) -> str:
    first = told.first
    how = (
        f"{told.raised.short_type}: {clip(told.raised.message)}"
        if told.raised is not None
        else exit_text(first)
    )
    name = capital(told.name)
    if first.host:
        return _(
            "{name}{pid} on {host} failed first ({how})",
            name=name,
            pid=pid,
            host=first.host,
            how=how,
        )
    return _("{name}{pid} failed first ({how})", name=name, pid=pid, how=how)


class RankExitedFromLog(LogRule):
    """a rank exited and the job failed with it

    Fires when: torchrun's failure summary (or `torch.multiprocessing.spawn`'s): the first rank that
    failed, and what its signal or exit code means; a rank that died of an exception of its own code
    is left to the failure rules, which name that exception at its origin

    Why: When one rank dies (an exception, a signal, the OOM killer) or returns early, the launcher
    ends the others, which then print errors of their own about lost peers and broken collectives.
    The first rank that failed, and how (its exit code or signal), is the cause; the rest of the log
    is its consequence.

    Instead: Read the first failed rank's own traceback (the lines prefixed with its rank) and fix
    that; for SIGKILL check the OOM killer (`dmesg`), for an exit without error look for a `return`
    or `break` only some ranks take, and make early stopping a collective decision.
    """

    id = "HD352"
    category = Category.DISTRIBUTED_RANK_EXITED
    specificity = 80
    defers_to = (
        Deferral(
            frozenset({"HD350"}),
            why="the collective timed out first: the abort or the lost peer followed from it",
            when=_ended_by_a_collective_timeout,
        ),
        Deferral(
            frozenset({"HD354"}),
            why="gloo aborted the rank on a size mismatch: the mismatch is the cause",
            when=_aborted_on_a_size_mismatch,
        ),
        Deferral(
            EXCEPTION_FAILURE_RULES,
            why="the rank died of an exception of its own code: the failure rules name that "
            "exception at its origin, in its own category",
            when=_died_of_its_own_exception,
        ),
    )

    def check(self, job: JobView) -> Iterable[Finding]:
        lines = output_lines(job)
        failures = _failures(job, lines)
        if not failures:
            return
        first = _first_failure(failures)
        if first.signal is not None:
            told = _killed(job, first, rank_name(first))
        else:
            told = _exited_without_signal(job, lines, failures, first)
        evidence = _evidence(job, failures, told)
        if job.record is None:  # only logs: `run` would have watched every rank
            told.fixes.append(
                _(
                    "Run the job under `hangdoctor run -- torchrun ...`, which watches "
                    "every rank and reports the first one that dies, with its signal and "
                    "memory."
                )
            )
        yield self.finding(
            severity=told.severity,
            confidence=told.confidence,
            # the pid torchrun's summary gave the failure it put first
            title=_title(told, f" (pid {first.pid})" if first.pid else ""),
            explanation=told.explanation,
            culprit=Culprit(
                rank=told.first.rank, pid=told.first.pid, role="rank", location=told.location
            ),
            evidence=tuple(evidence[:MAX_EVIDENCE]),
            fixes=tuple(told.fixes),
        )
