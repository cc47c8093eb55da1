"""What the fallback rules over failed jobs share: whether the job failed, the exception it
failed of, which category its message names, and the finding that names it.

Every failed report names the failure: when no specific rule explains a job that failed, one of
the `*_failure.py` rules (one per category, the category being the exception's mechanism) names
the first exception, its line in the user's code and the library call made there; a job that
failed without a traceback still gets its exit status and last lines of output.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from hangdoctor.analysis.frames import Origin, innermost_user_frame, origin, short_file
from hangdoctor.analysis.job import JobView
from hangdoctor.analysis.logs import split_prefix
from hangdoctor.analysis.tracebacks import Raised, first_failure, is_consequence, tracebacks
from hangdoctor.evidence.logfiles import LOGS_ONLY_PID
from hangdoctor.evidence.model import Frame
from hangdoctor.i18n import N_, _
from hangdoctor.knowledge.errors import Explained, explain
from hangdoctor.rules.confidence import Confidence
from hangdoctor.rules.finding import Culprit, Finding, Location, Severity
from hangdoctor.rules.log_helpers import clip, killed_by, output_lines
from hangdoctor.taxonomy import Category

#: Messages that name a mechanism, by category; matched against `Type: message`.
_MECHANISMS: tuple[tuple[Category, re.Pattern[str]], ...] = (
    (
        Category.GPU_MEMORY_EXHAUSTED,
        re.compile(
            r"CUDA out of memory|OutOfMemoryError|CUBLAS_STATUS_ALLOC_FAILED|"
            r"HIP out of memory|MPS backend out of memory"
        ),
    ),
    (
        Category.HOST_MEMORY_EXHAUSTED,
        re.compile(
            r"^MemoryError\b|Cannot allocate memory|\[Errno 12\]|std::bad_alloc|"
            r"DefaultCPUAllocator: can't allocate memory"
        ),
    ),
    # RLIMIT_FSIZE (EFBIG; Python ignores SIGXFSZ, so the write fails), RLIMIT_NOFILE (EMFILE),
    # RLIMIT_NPROC (threads or processes that cannot be created).
    (
        Category.ENV_OS_LIMITS,
        re.compile(
            r"\[Errno 27\]|File too large|\[Errno 24\]|Too many open files|"
            r"can't start new thread|\[Errno 11\] Resource temporarily unavailable"
        ),
    ),
    # Autograd's anomaly mode, clip_grad_norm_(error_if_nonfinite=True), a distribution's
    # argument check on NaN parameters, explicit NaN checks.
    (
        Category.ALGORITHM_NONFINITE,
        re.compile(
            r"returned nan values|is non-finite|found invalid values:.*\bnan\b|"
            r"\b(?:NaN|nan|Inf|inf) (?:detected|found|encountered)\b|[Dd]etected (?:a )?(?:NaN|nan)\b|"
            r"\bloss is (?:nan|NaN|inf)\b"
        ),
    ),
)
#: Wrappers that report another process's failure (Ray Train's driver, Ray's actor deaths).
_WRAPPER = re.compile(r"TrainingFailedError|WorkerGroupError|RayActorError|ActorDiedError")
_LAST_LINES = 5


@dataclass(frozen=True)
class Failure:
    """What a failed job died of, as far as its output tells."""

    raised: Raised | None  # the first exception of its own; None when nothing was printed
    exit_code: int | None
    signal: int | None
    last_lines: tuple[str, ...]
    #: Every traceback of its own in the output (for the count in the evidence).
    count: int = 0
    #: The traceback that reached the user's code when `raised` (the first of a chain) was
    #: raised inside a library and another was raised while handling it.
    surfaced: Raised | None = None
    #: Finite limits the job's processes ran under (the instrumentation's status files).
    limits: dict[str, int] = field(default_factory=dict)
    #: Other ranks whose tracebacks only say they lost a peer (consequences of this failure).
    lost_peers: tuple[int, ...] = ()


def _own(found: Sequence[Raised]) -> list[Raised]:
    """The job's own failures: each traceback that no other exception quotes, judged by its
    origin (a DataLoader's `Caught KeyError` by the worker's KeyError), without the lost
    connections and launcher summaries that other processes' failures cause."""
    return [
        r
        for r in found
        if not r.quoted and not is_consequence(r.origin) and not _WRAPPER.search(r.origin.type)
    ]


def _fatal(raised: Raised) -> bool:
    """Whether the traceback ended a process or a thread: it reaches a module's top level, it
    is a thread's death, or a launcher's rank printed it."""
    return raised.uncaught or raised.thread is not None or raised.rank is not None


def failure_of(job: JobView) -> Failure | None:
    """The failure of a job that failed: `run` saw it exit non-zero (not a hang, not the
    user's Ctrl-C), or its logs (`analyze`) end in a traceback nobody caught."""
    record = job.record
    if (
        record is None
        or record.hang_declared_s is not None
        or record.killed_by_hangdoctor
        or record.interrupted
    ):
        return None
    lines = output_lines(job)
    # Without a failure of its own (a rendezvous that timed out, an actor that died), the job
    # failed of what it was told: that exception is still the one to explain.
    found = tracebacks(lines)
    own = _own(found) or [r for r in found if not r.quoted]
    if record.exit_code is None:
        # Logs alone: the job failed when a traceback reaches a module's top level, or a
        # rank's own exception ended it (PyTorch prefixes it with the rank).
        if job.bundle.target_pid != LOGS_ONLY_PID or not (
            any(r.uncaught for r in found) or first_failure(lines) is not None
        ):
            return None
    elif record.exit_code == 0:
        return None
    # The first failure that ended a process or a thread, in the user's code: a thread that
    # died before the main thread noticed is where it started, a child's traceback comes before
    # the CalledProcessError of its parent.
    mine = [r for r in own if r.in_user_code or r.origin.in_user_code]
    first = next((r for r in mine if _fatal(r)), mine[0] if mine else own[0] if own else None)
    last = tuple(clip(split_prefix(line).text.rstrip()) for line in lines if line.strip())[
        -_LAST_LINES:
    ]
    return Failure(
        raised=first.origin if first is not None else None,
        lost_peers=tuple(
            sorted(
                {
                    r.rank
                    for r in found
                    if r.rank is not None
                    and first is not None
                    and r.rank != first.origin.rank
                    and is_consequence(r.unwrapped)
                }
            )
        ),
        exit_code=record.exit_code,
        signal=record.signal,
        last_lines=last,
        count=len(own),
        surfaced=first,
        limits=job_limits(job),
    )


# A write that failed without saying why (C++ streams report no errno): under a finite
# file-size limit, that limit is the likely cause.
_WRITE_FAILED = re.compile(
    r"iostream error|unexpected pos|failed writing|write failed|"
    r"PytorchStreamWriter failed",
    re.IGNORECASE,
)


def job_limits(job: JobView) -> dict[str, int]:
    """The finite limits the job's processes ran under, as the in-job hooks reported them
    (`file_size`, `open_files`, ...)."""
    limits: dict[str, int] = {}
    for status in job.record.progress if job.record is not None else ():
        limits.update(status.limits)
    return limits


def category_of(raised: Raised | None, limits: dict[str, int] | None = None) -> Category:
    """The category an exception's type and message name: a known error's (the knowledge
    base), a mechanism's, else process.exception (the job's own code raised it); without an
    exception, process.unexplained."""
    if raised is None:
        return Category.PROCESS_UNEXPLAINED
    known = explain(raised.short_type, raised.message, raised.details)
    if known is not None:
        return known.error.category
    text = f"{raised.short_type}: {raised.message}"
    named = next(
        (category for category, pattern in _MECHANISMS if pattern.search(text)),
        Category.PROCESS_EXCEPTION,
    )
    if (
        named is Category.PROCESS_EXCEPTION
        and limits
        and "file_size" in limits
        and _WRITE_FAILED.search(text)
    ):
        return Category.ENV_OS_LIMITS
    return named


def library_call(raised: Raised) -> Frame | None:
    """The call the user's line made into a library (the frame just inside it), if any."""
    user = innermost_user_frame(raised.frames)
    if user is None:
        return None
    index = raised.frames.index(user)
    inner = raised.frames[index - 1] if index > 0 else None
    return inner if inner is not None and origin(inner) is not Origin.USER else None


def _status(failure: Failure) -> str:
    if failure.signal is not None:
        return killed_by(failure.signal)
    if failure.exit_code is not None:
        return _("exit {code}", code=failure.exit_code)
    return _("it ended")


_FIXES: dict[Category, tuple[str, ...]] = {
    Category.GPU_MEMORY_EXHAUSTED: (
        N_(
            "Use less device memory at that line: a smaller batch, gradient accumulation, mixed "
            "precision, activation checkpointing; `torch.cuda.memory_summary()` shows what holds it."
        ),
    ),
    Category.HOST_MEMORY_EXHAUSTED: (
        N_(
            "Use less host memory there: load data lazily (memory-mapped files, streaming), fewer "
            "DataLoader workers, no copy of the dataset per worker; check the container's limit."
        ),
    ),
    Category.ENV_OS_LIMITS: (
        N_(
            "Check the limits the job runs under (`ulimit -a` in the job's own environment): the "
            "file-size limit (`ulimit -f`), open files (`ulimit -n`), processes (`ulimit -u`); "
            "raise the one the error names, or write/open less at that line."
        ),
    ),
    Category.ALGORITHM_NONFINITE: (
        N_(
            "Find the first non-finite value: the operation named by anomaly mode, its inputs "
            "(log, sqrt, division by a value that can be 0), the learning rate; clip gradients."
        ),
    ),
    Category.PROCESS_UNEXPLAINED: (
        N_("Fix the error at the line named: the exception's message says what was wrong there."),
    ),
    Category.PROCESS_EXCEPTION: (
        N_(
            "Reproduce it alone: run that line with the same input (the record, batch or "
            "argument it had) in one process, without the launcher or DataLoader workers "
            "(`num_workers=0`), and fix the input or the code there."
        ),
    ),
}


def failure_finding(rule_id: str, category: Category, failure: Failure) -> Finding:
    """The finding naming the failure: the exception, its rank, its line and library call."""
    raised = failure.raised
    if raised is None:
        return _without_traceback(rule_id, category, failure)
    shown = _nearest_with_user_frame(raised, failure.surfaced)
    user = innermost_user_frame(shown.frames)
    call = library_call(shown)
    where = (
        _(" at {file}:{line}", file=short_file(user.file), line=user.line)
        if user is not None
        else _(" (no frame in your code)")
    )
    rank = _(" on rank {rank}", rank=raised.rank) if raised.rank is not None else ""
    thread = _(" in {thread}", thread=raised.thread) if raised.thread else ""
    process = _(" in {process}", process=raised.process) if raised.process else ""
    message = f": {clip(raised.message)}" if raised.message else ""
    known = explain(raised.short_type, raised.message, raised.details)
    title_call = _(" (in {function})", function=call.function) if call is not None else ""
    return Finding(
        id=rule_id,
        category=category,
        severity=Severity.ERROR,
        confidence=(
            Confidence.FAIR
            if known is not None and user is not None
            else Confidence.PLAUSIBLE
            if category is not Category.PROCESS_UNEXPLAINED
            else Confidence.POSSIBLE
        ),
        title=f"{raised.short_type}{message}{where}{title_call}{rank}{process}{thread}",
        explanation=_(
            "The job failed of this exception (the first one of its own in the "
            "output; what was raised while handling it, and other ranks' lost "
            "connections, came after)."
        ),
        culprit=Culprit(
            rank=raised.rank,
            role="rank" if raised.rank is not None else None,
            thread=raised.thread,
            location=Location.of(user),
        ),
        evidence=(
            f"{raised.type}{message}",
            *([_("what it means: {meaning}", meaning=known.meaning)] if known else []),
            *_places(raised, shown, user, call),
            *_circumstances(failure, category, raised),
        ),
        fixes=_fixes(category, raised, user, known),
    )


def _without_traceback(rule_id: str, category: Category, failure: Failure) -> Finding:
    """A job that failed and printed no traceback: its status and last lines."""
    last = tuple(_("last output: {line}", line=line) for line in failure.last_lines)
    return Finding(
        id=rule_id,
        category=category,
        severity=Severity.ERROR,
        confidence=Confidence.GUESS,
        title=_("The job failed ({status}) without a Python traceback", status=_status(failure)),
        explanation=_(
            "The job ended with an error status and printed no traceback: a "
            "native crash, a process that called exit() with an error code, or "
            "a child's failure passed on. Its last lines of output are below."
        ),
        evidence=last or (_("the job printed nothing"),),
        fixes=(
            _(
                "Look at the last lines of output above and at the code that exits with "
                "that status (`sys.exit(N)`, a shell script's `exit N`)."
            ),
            _("For a native crash, run with `python -X faulthandler` to get the stack."),
        ),
    )


def _places(raised: Raised, shown: Raised, user: Frame | None, call: Frame | None) -> list[str]:
    """Where it was raised: the user's line, the library call it made there (else the line
    that raised, with no frame of the user's), and the exception shown instead of the origin."""
    evidence: list[str] = []
    if user is not None:
        code = f" `{user.code}`" if user.code else ""
        evidence.append(
            _(
                "your code: {file}:{line} in {function}{code}",
                file=user.file,
                line=user.line,
                function=user.function,
                code=code,
            )
        )
    if call is not None:
        evidence.append(
            _(
                "library call: {function} ({file}:{line})",
                function=call.function,
                file=short_file(call.file),
                line=call.line,
            )
        )
    elif user is None and raised.frames:
        inner = raised.frames[0]
        evidence.append(
            _(
                "raised in {function} ({file}:{line})",
                function=inner.function,
                file=short_file(inner.file),
                line=inner.line,
            )
        )
    return evidence


def _circumstances(failure: Failure, category: Category, raised: Raised) -> list[str]:
    """How it surfaced, the limit it ran into, the peers it took down and the job's status."""
    evidence: list[str] = []
    surfaced = failure.surfaced
    if surfaced is not None and surfaced.origin is raised and surfaced is not raised:
        evidence.append(
            _(
                "re-raised as {type} at {where}: the path it took, not its origin",
                type=surfaced.short_type,
                where=_where(surfaced),
            )
        )
    shown = _nearest_with_user_frame(raised, surfaced)
    if shown is not raised:
        user = innermost_user_frame(shown.frames)
        evidence.append(
            _(
                "raised inside a library; while handling it, {type} "
                "reached your code at {file}:{line}",
                type=shown.short_type,
                file=short_file(user.file),
                line=user.line,
            )
            if user is not None
            else _("then {type} was raised", type=shown.short_type)
        )
    if category is Category.ENV_OS_LIMITS and "file_size" in failure.limits:
        evidence.append(
            _(
                "the process ran under a file-size limit of "
                "{limit} bytes (RLIMIT_FSIZE, `ulimit -f`): a "
                "write past it fails",
                limit=failure.limits["file_size"],
            )
        )
    if raised.rank is not None and failure.lost_peers:
        evidence.append(
            _(
                "rank(s) {ranks} failed after it, of lost connections: they lost their peer",
                ranks=", ".join(map(str, failure.lost_peers)),
            )
        )
    evidence.append(
        _(
            "the job failed ({status}); {count} traceback(s) of its own in "
            "the output, this is the first",
            status=_status(failure),
            count=failure.count,
        )
    )
    return evidence


def _fixes(
    category: Category, raised: Raised, user: Frame | None, known: Explained | None
) -> tuple[str, ...]:
    """The known error's fix at the user's line, else what its message says; then the
    category's general advice."""
    at = (
        _(
            "At {file}:{line}{code}: ",
            file=short_file(user.file),
            line=user.line,
            code=(f" (`{user.code}`)" if user.code else ""),
        )
        if user is not None
        else ""
    )
    fixes: tuple[str, ...] = ()
    if known is not None:
        fixes += (at + known.fix, _("More: {link}", link=known.error.link))
    elif category is Category.PROCESS_EXCEPTION:
        fixes += (
            at
            + _(
                "{type} says: {message}",
                type=raised.short_type,
                message=clip(raised.message) or _("(no message)"),
            ),
        )
    if known is None or category is not Category.PROCESS_EXCEPTION:
        fixes += tuple(_(fix) for fix in _FIXES.get(category, ()))
    if user is None:
        fixes += (
            _(
                "No frame of the traceback is in your code: the failure is inside the "
                "launcher or a library; its message and the command line are where to look."
            ),
        )
    return fixes


def _nearest_with_user_frame(origin: Raised, surfaced: Raised | None) -> Raised:
    """The exception to show the user's line of: the origin when its traceback has one, else
    the one closest to it on the way it surfaced (Ray drops the frames of a remote chain's
    first exception; a library's error is re-raised in the user's code)."""
    if innermost_user_frame(origin.frames) is not None or surfaced is None:
        return origin
    path = surfaced.path
    end = next((i for i, r in enumerate(path) if r is origin), len(path) - 1)
    path = path[: end + 1]
    return next((r for r in reversed(path) if innermost_user_frame(r.frames)), surfaced)


def _where(raised: Raised) -> str:
    """`file:line` of a traceback's innermost frame in the user's code (else its innermost)."""
    frame = raised.location
    return f"{short_file(frame.file)}:{frame.line}" if frame is not None else "?"


def check_failure(job: JobView, rule_id: str, category: Category) -> list[Finding]:
    """The finding of the rule for `category`, when the job failed of an exception of it."""
    failure = failure_of(job)
    if failure is None or category_of(failure.raised, failure.limits) is not category:
        return []
    return [failure_finding(rule_id, category, failure)]
