"""Threads that died of an exception in the user's code: recorded whole by the
instrumentation (`died-<pid>.txt`), else parsed from the job's output. A wait that only such a
thread could have ended never ends."""

from __future__ import annotations

from dataclasses import dataclass

from hangdoctor.analysis.job import JobView
from hangdoctor.analysis.tracebacks import Raised, tracebacks
from hangdoctor.i18n import N_
from hangdoctor.rules.log_helpers import output_lines


@dataclass(frozen=True)
class Death:
    """A thread that died of an exception in the user's code."""

    raised: Raised
    pid: int | None  # None: read from the output, whose process is not known
    #: Where it was read, in English (marked for translation: `_(death.source)` where shown).
    source: str


def thread_deaths(job: JobView) -> list[Death]:
    """Threads (not a main one) that died in the user's code: those the instrumentation
    recorded whole first, then those parsed from the output."""
    record = job.bundle.job
    recorded = [
        Death(r, death.pid, N_("recorded by the instrumentation"))
        for death in (record.thread_deaths if record else ())
        for r in tracebacks(tuple(death.text.splitlines()))
        if r.thread is not None and r.in_user_code
    ]
    logged = [
        Death(r, None, N_("log"))
        for r in tracebacks(output_lines(job))
        if r.thread is not None and r.in_user_code
    ]
    return recorded + logged


def died_in(deaths: list[Death], pid: int) -> Death | None:
    """The death that explains a wait in process `pid`: one recorded in that process, else one
    from the output (when nothing was recorded, as without the instrumentation)."""
    if any(d.pid is not None for d in deaths):
        return next((d for d in deaths if d.pid == pid), None)
    return deaths[0] if deaths else None
