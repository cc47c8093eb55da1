"""The one diagnosis pipeline: evidence in, report out. `dump`, `analyze` and `run` all call
`diagnose`; it builds the job view once, runs the rules, decides the verdict, builds the typed
report and (when asked) writes the report directory."""

from __future__ import annotations

import gc
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path

from pydantic import TypeAdapter

from hangdoctor.analysis.activity import hang_kind
from hangdoctor.analysis.job import JobView
from hangdoctor.analysis.waitgraph import build_wait_graph
from hangdoctor.analysis.waits import describe_wait
from hangdoctor.evidence.model import Bundle, ProcessEvidence, ThreadEvidence
from hangdoctor.report.directory import write_report_dir
from hangdoctor.report.model import (
    CaptureInfo,
    Hang,
    JobSummary,
    LogSource,
    ProcessReport,
    Report,
    Verdict,
    WaitFor,
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


def _percent(share: float | None) -> float | None:
    return round(share * 100, 1) if share is not None else None


def _thread(job: JobView, process: ProcessEvidence, thread: ThreadEvidence
            ) -> dict[str, object]:
    kernel, python = thread.kernel, thread.python
    return {
        "tid": thread.tid,
        "name": (python.name if python else None) or thread.comm,
        "state": kernel.state if kernel else None,
        "wchan": kernel.wchan if kernel else None,
        "syscall": (kernel.syscall_name or kernel.syscall) if kernel else None,
        "waiting_on": describe_wait(job, process, thread).summary,
        "cpu_percent": _percent(job.thread_cpu_share(process.pid, thread.tid)),
        "owns_gil": python.owns_gil if python else None,
        "active": python.active if python else None,
        "stack": [{"file": f.file, "line": f.line, "function": f.function, "code": f.code,
                   "native": f.native} for f in (python.frames if python else ())],
    }


def _processes(job: JobView) -> list[ProcessReport]:
    """Every process as the report's model. Built as plain data and validated in one pass
    (in pydantic's core): a job of thousands of ranks has tens of thousands of frames."""
    return _PROCESSES.validate_python([
        {
            "pid": process.pid,
            "ppid": process.ppid,
            "role": job.role(process.pid),
            "rank": job.rank(process.pid),
            "name": process.name,
            "command": list(process.cmdline),
            "state": process.state or "unknown",
            "cpu_percent": _percent(job.process_cpu_share(process.pid)),
            "rss_bytes": process.rss_bytes,
            "python": bool(process.is_python),
            "stacks_read": process.stacks_sampled,
            "threads": [_thread(job, process, thread) for thread in process.threads],
        }
        for process in job.processes
    ])


_PROCESSES = TypeAdapter(list[ProcessReport])


def _wait_for(job: JobView) -> list[WaitFor]:
    """The wait-for graph as the report's edges: who each waiting thread waits for, or what
    outside the job (or nothing) could end its wait."""
    graph = build_wait_graph(job)
    edges: list[WaitFor] = []
    for party, wait in graph.waits.items():
        pid, tid = party
        for edge in graph.edges.get(party, []):
            edges.append(WaitFor(pid=pid, tid=tid, waits_in=wait.summary, on_pid=edge.waited[0],
                                 on_tid=edge.waited[1], why=edge.why, certain=edge.certain))
        if party in graph.outside:
            edges.append(WaitFor(pid=pid, tid=tid, waits_in=wait.summary,
                                 why=f"only this can end it: {graph.outside[party]}"))
        if party in graph.nobody:
            edges.append(WaitFor(pid=pid, tid=tid, waits_in=wait.summary,
                                 why=f"nothing can end it: {graph.nobody[party]}"))
    return edges


def _job_summary(bundle: Bundle) -> JobSummary | None:
    record = bundle.job
    if record is None:
        return None
    return JobSummary(
        duration_s=round(record.ended_at - record.started_at, 3) if record.ended_at else None,
        signal=record.signal,
        interrupted=record.interrupted,
        killed_by_hangdoctor=record.killed_by_hangdoctor,
        hang_timeout_s=record.hang_timeout_s,
        output_bytes=record.output_bytes,
        progress=list(record.progress),
    )


def build_report(job: JobView, diagnosis: Diagnosis, context: Context) -> Report:
    """The typed report for evidence already diagnosed."""
    bundle = job.bundle
    verdict = decide_verdict(context.mode, diagnosis, context.verdict)
    hang = context.hang
    if hang is None and verdict == "hung":
        hang = Hang(kind=hang_kind(job))
    return Report(
        command=list(bundle.job.command if bundle.job else bundle.command),
        verdict=verdict,
        exit_code=context.exit_code,
        hang=hang,
        findings=list(diagnosis.findings),
        processes=_processes(job),
        system=bundle.system,
        capture=CaptureInfo(
            target_pid=bundle.target_pid,
            samples=len(bundle.snapshots),
            seconds_sampled=round(job.sampled_span_s, 3),
            timings_s=dict(bundle.timings_s),
            errors=list(bundle.errors),
            job=_job_summary(bundle),
            rule_errors=list(diagnosis.rule_errors),
            logs=list(context.logs),
        ),
        artifacts=dict(context.artifacts),
        wait_for=_wait_for(job) if verdict in ("hung", "running") else [],
    )


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
        report = build_report(job, run_rules(job, context.rules), context)
    if context.report_dir is not None:
        report = write_report_dir(context.report_dir, report,
                                  bundle if context.save_evidence else None)
    return report
