"""The one diagnosis pipeline: evidence in, report out. `dump`, `analyze` and `run` all call
`diagnose`; it builds the job view once, runs the rules, decides the verdict, has report/ build
the typed report and (when asked) writes the report directory."""

from __future__ import annotations

import gc
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path

from hangdoctor.analysis.job import JobView
from hangdoctor.evidence.model import Bundle
from hangdoctor.report.build import build_report
from hangdoctor.report.directory import write_report_dir
from hangdoctor.report.model import (
    Hang,
    LogSource,
    Report,
    Verdict,
)
from hangdoctor.rules.base import Rule
from hangdoctor.rules.engine import Diagnosis, run_rules
from hangdoctor.rules.registry import ALL_RULES


class Mode(str, Enum):
    """What the evidence is, which decides how a verdict is reached."""

    LIVE = "live"  # a one-off capture of a running tree (`dump`, or a saved one re-analysed)
    LOGS = "logs"  # log files of a job that is over (`analyze FILE...`)
    HANG = "hang"  # `run` declared a hang and captured the tree
    ENDED = "ended"  # `run` saw the job end; the verdict comes with the context


@dataclass(frozen=True)
class Context:
    """What the caller knows beyond the evidence."""

    mode: Mode = Mode.LIVE
    verdict: Verdict | None = None  # Mode.ENDED: decided from how the job ended
    exit_code: int | None = None
    hang: Hang | None = None
    report_dir: Path | None = None  # write report.json, report.md (and evidence) there
    save_evidence: bool = True
    logs: Sequence[LogSource] = ()
    artifacts: Mapping[str, str] = field(default_factory=dict)
    rules: Sequence[type[Rule]] = ALL_RULES


def decide_verdict(mode: Mode, diagnosis: Diagnosis, given: Verdict | None = None) -> Verdict:
    """The verdict, in one place.

    - a live capture is `hung` when something of severity error or critical was found, else
      `running`;
    - logs are read after the fact, so the job is over: an error-level finding in them is what
      ended it (`failed`); without one the logs show no failure (`completed`; the exit code is
      not known);
    - `run` at a hang says `hung`; at the end, how the job ended decides (`given`).
    """
    problem = any(f.severity.is_problem for f in diagnosis.findings)
    if mode is Mode.LIVE:
        return "hung" if problem else "running"
    if mode is Mode.LOGS:
        return "failed" if problem else "completed"
    if mode is Mode.HANG:
        return "hung"
    if given is None:
        raise ValueError("a job that ended needs its verdict")
    return given


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector: diagnosing a job of thousands of ranks allocates
    hundreds of thousands of short-lived, acyclic objects, and the collector's passes over
    them cost more than the work itself (reference counting still frees them at once)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def diagnose(bundle: Bundle, context: Context | None = None) -> Report:
    """Evidence to report: the one path every command takes."""
    context = context or Context()
    with gc_paused():
        job = JobView(bundle)
        diagnosis = run_rules(job, context.rules)
        verdict = decide_verdict(context.mode, diagnosis, context.verdict)
        report = build_report(
            job,
            diagnosis,
            verdict,
            hang=context.hang,
            exit_code=context.exit_code,
            logs=context.logs,
            artifacts=context.artifacts,
        )
    if context.report_dir is not None:
        report = write_report_dir(
            context.report_dir,
            report,
            bundle if context.save_evidence else None,
            page_bundle=bundle,
        )
    return report
