"""HD552 env.os_limits: The job ran out of file descriptors (`ulimit -n`), often because DataLoader
workers pass every tensor as a descriptor."""

from __future__ import annotations

from collections.abc import Iterable

from hangdoctor.analysis.frames import short_file
from hangdoctor.analysis.job import JobView
from hangdoctor.analysis.logs import LogKind, LogMatch
from hangdoctor.analysis.tracebacks import tracebacks
from hangdoctor.i18n import _
from hangdoctor.rules._failure import job_limits
from hangdoctor.rules._log_rule import LogKindsRule
from hangdoctor.rules.confidence import Confidence
from hangdoctor.rules.finding import Culprit, Finding, Location
from hangdoctor.rules.log_helpers import cite, output_lines
from hangdoctor.taxonomy import Category

_EMFILE = "Too many open files"


class OpenFilesLimit(LogKindsRule):
    """out of file descriptors

    Fires when: `Too many open files`, `received 0 items of ancdata`

    Why: Each process may open only so many files (`ulimit -n`, often 1024). DataLoader workers send
    every tensor to the main process as a file descriptor, so many workers or large batches exhaust
    a low limit and the job fails with `Too many open files` or `received 0 items of ancdata`.

    Instead: Raise the limit before launching (`ulimit -n 65536`; Docker `--ulimit
    nofile=65536:65536`; systemd `LimitNOFILE=`), or call
    `torch.multiprocessing.set_sharing_strategy("file_system")` at start; close files and sockets
    opened per step or per sample.
    """

    id = "HD552"
    category = Category.ENV_OS_LIMITS
    specificity = 70
    kinds = (LogKind.TOO_MANY_OPEN_FILES,)

    def explain(self, job: JobView, found: list[LogMatch]) -> Iterable[Finding]:
        # The line of the user's code that failed to open one more (an `open()` per sample).
        raised = next(
            (
                r.origin
                for r in tracebacks(output_lines(job))
                if _EMFILE in r.origin.message and r.origin.location is not None
            ),
            None,
        )
        frame = raised.location if raised is not None else None
        opened: tuple[str, ...] = ()
        title = _("The job ran out of file descriptors (ulimit -n)")
        if frame is not None:
            where = f"{short_file(frame.file)}:{frame.line}"
            title = _("The job ran out of file descriptors (ulimit -n) at {where}", where=where)
            opened = (
                _(
                    "At {where}: this line could not open one more; if it opens a file per "
                    "sample or step, close it (`with open(...)`) or keep one handle per file.",
                    where=where,
                ),
            )
        limit = job_limits(job).get("open_files")
        limit_evidence = (
            (
                _(
                    "the process ran with at most {limit} open files (RLIMIT_NOFILE, `ulimit -n`)",
                    limit=limit,
                ),
            )
            if limit is not None
            else ()
        )
        yield self.finding(
            confidence=Confidence.CERTAIN,
            title=title,
            culprit=Culprit(location=Location.of(frame)) if frame is not None else None,
            explanation=_(
                "The process hit its limit on open files. DataLoader workers send "
                "each tensor to the main process as a file descriptor, so many workers "
                "or large batches exhaust a low limit (often 1024)."
            ),
            evidence=(*limit_evidence, *cite(found)),
            fixes=(
                *opened,
                _(
                    "Raise the limit before launching: `ulimit -n 65536` (Docker: `--ulimit "
                    "nofile=65536:65536`; systemd: LimitNOFILE=; Slurm: check "
                    "PropagateResourceLimits)."
                ),
                _(
                    "Or call `torch.multiprocessing.set_sharing_strategy('file_system')` at start, "
                    "which needs far fewer descriptors."
                ),
                _("Look for files or sockets opened per step or per sample and never closed."),
            ),
        )
