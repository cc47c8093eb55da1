"""The report: report.schema.json (schema_version 1) as typed data, and how to build it."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, model_serializer

from hangdoctor import __version__
from hangdoctor.analysis.activity import hang_kind
from hangdoctor.analysis.job import JobView
from hangdoctor.analysis.waits import describe_wait
from hangdoctor.evidence.model import Bundle
from hangdoctor.rules.engine import Diagnosis
from hangdoctor.rules.finding import Finding, Severity

Verdict = Literal["hung", "completed", "failed", "interrupted", "running"]


class Tool(BaseModel):
    """Who wrote the report."""

    name: Literal["hangdoctor"] = "hangdoctor"
    version: str = __version__


class Hang(BaseModel):
    """When and how the job hung. Times unknown to a one-off dump are left out, not null."""

    kind: Literal["idle", "busy"]
    last_progress_s: float | None = None
    declared_s: float | None = None

    @model_serializer(mode="wrap")
    def _without_unknown_times(self, handler: Any) -> dict[str, Any]:
        return {key: value for key, value in handler(self).items() if value is not None}


class Report(BaseModel):
    """Everything a user or a script needs; see report.schema.json."""

    model_config = ConfigDict(frozen=True)

    schema_version: Literal["1"] = "1"
    tool: Tool = Tool()
    command: list[str] = []
    verdict: Verdict
    exit_code: int | None = None
    hang: Hang | None = None
    findings: list[Finding]
    processes: list[dict[str, Any]]
    gpus: list[dict[str, Any]] = []
    system: dict[str, Any] = {}
    capture: dict[str, Any] = {}
    artifacts: dict[str, str] = {}

    @property
    def root_cause(self) -> Finding | None:
        """The most likely root cause, if anything was found."""
        return self.findings[0] if self.findings else None


def _percent(share: float | None) -> float | None:
    return round(share * 100, 1) if share is not None else None


def _processes(job: JobView) -> list[dict[str, Any]]:
    out = []
    for process in job.processes:
        threads = []
        for thread in process.threads:
            kernel = thread.kernel
            python = thread.python
            threads.append({
                "tid": thread.tid,
                "name": (python.name if python else None) or thread.comm,
                "state": kernel.state if kernel else None,
                "wchan": kernel.wchan if kernel else None,
                "syscall": kernel.syscall_name or kernel.syscall if kernel else None,
                "waiting_on": describe_wait(job, process, thread).summary,
                "cpu_percent": _percent(job.thread_cpu_share(process.pid, thread.tid)),
                "owns_gil": python.owns_gil if python else None,
                "active": python.active if python else None,
                "stack": [
                    {"file": f.file, "line": f.line, "function": f.function, "code": f.code,
                     "native": f.native}
                    for f in (python.frames if python else ())
                ],
            })
        out.append({
            "pid": process.pid,
            "ppid": process.ppid,
            "role": job.role(process.pid).value,
            "rank": job.rank(process.pid),
            "name": process.name,
            "command": list(process.cmdline),
            "state": process.state or "unknown",
            "cpu_percent": _percent(job.process_cpu_share(process.pid)),
            "rss_bytes": process.rss_bytes,
            "python": process.is_python,
            "stacks_read": process.stacks_sampled,
            "threads": threads,
        })
    return out


def _job_summary(bundle: Bundle) -> dict[str, Any]:
    record = bundle.job
    if record is None:
        return {}
    return {
        "job": {
            "duration_s": round(record.ended_at - record.started_at, 3)
            if record.ended_at else None,
            "signal": record.signal,
            "interrupted": record.interrupted,
            "killed_by_hangdoctor": record.killed_by_hangdoctor,
            "hang_timeout_s": record.hang_timeout_s,
            "output_bytes": record.output_bytes,
            "progress": [s.model_dump() for s in record.progress],
        }
    }


def build_report(
    bundle: Bundle,
    diagnosis: Diagnosis,
    *,
    verdict: Verdict | None = None,
    exit_code: int | None = None,
    hang: Hang | None = None,
    artifacts: dict[str, str] | None = None,
) -> Report:
    """The report for a capture; a dump's verdict is `hung` when something is wrong."""
    job = JobView(bundle)
    problems = [f for f in diagnosis.findings if f.severity in (Severity.ERROR,
                                                                 Severity.CRITICAL)]
    if verdict is None:
        verdict = "hung" if problems else "running"
    if hang is None and verdict == "hung":
        hang = Hang(kind=hang_kind(job))
    return Report(
        command=list(bundle.job.command if bundle.job else bundle.command),
        verdict=verdict,
        exit_code=exit_code,
        hang=hang,
        findings=list(diagnosis.findings),
        processes=_processes(job),
        system=bundle.system.model_dump(),
        capture={
            "target_pid": bundle.target_pid,
            "samples": len(bundle.snapshots),
            "seconds_sampled": round(job.sampled_span_s, 3),
            "timings_s": bundle.timings_s,
            "errors": [e.model_dump() for e in bundle.errors],
            **_job_summary(bundle),
            "rule_errors": list(diagnosis.rule_errors),
        },
        artifacts=dict(artifacts or {}),
    )
