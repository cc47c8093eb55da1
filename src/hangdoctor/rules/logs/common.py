"""What several log rules share: the lines they read (the job's output, the kernel log), the
matches of given kinds in them, and those matches cited as evidence, clipped and without
repeats; and `_logs`, the log-only bundle their examples run on, as `hangdoctor analyze` builds it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from hangdoctor.analysis.job import JobView
from hangdoctor.analysis.logs import LogMatch, scan
from hangdoctor.evidence.logfiles import log_bundle
from hangdoctor.evidence.model import Bundle

_MAX_EVIDENCE = 6
_MAX_LINE = 400


def _logs(output: Sequence[str] = (), kernel: Sequence[str] = ()) -> Bundle:
    """A log-only bundle, as `hangdoctor analyze FILE...` builds it."""
    return log_bundle(tuple(output), tuple(kernel))


def _output(job: JobView) -> tuple[str, ...]:
    return job.bundle.job.output_tail if job.bundle.job else ()


def _kernel(job: JobView) -> tuple[str, ...]:
    return job.bundle.job.kernel_log if job.bundle.job else ()


def _found(job: JobView, *kinds: str, kernel: bool = False) -> list[LogMatch]:
    lines = _kernel(job) if kernel else _output(job)
    return [m for m in scan(lines) if m.kind in kinds]


def _clip(line: str) -> str:
    return line if len(line) <= _MAX_LINE else line[: _MAX_LINE - 3] + "..."


def _cite(matches: Iterable[LogMatch], where: str = "log", limit: int = _MAX_EVIDENCE,
          ) -> list[str]:
    """Evidence lines, one per distinct message, at most `limit`."""
    out: list[str] = []
    seen: set[str] = set()
    for match in matches:
        if match.line in seen:
            continue
        seen.add(match.line)
        out.append(f"{where}: {_clip(match.line)}")
        if len(out) >= limit:
            break
    return out
