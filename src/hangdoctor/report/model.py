"""The report: report.schema.json (schema_version 1) as typed data. Renderers read it by
attribute; `hangdoctor.pipeline` builds it."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_serializer

from hangdoctor import __version__
from hangdoctor.analysis.roles import Role
from hangdoctor.evidence.model import (
    NodesEvidence,
    ProbeError,
    ProgressStatus,
    RankClass,
    SystemInfo,
)
from hangdoctor.i18n import Language
from hangdoctor.rules.finding import Finding

Verdict = Literal["hung", "completed", "failed", "interrupted", "running"]


class ReportModel(BaseModel):
    """Base of the report's parts: immutable."""

    model_config = ConfigDict(frozen=True)


class Tool(ReportModel):
    """Who wrote the report."""

    name: Literal["hangdoctor"] = "hangdoctor"
    version: str = __version__


class Hang(ReportModel):
    """When and how the job hung. Times unknown to a one-off dump are left out, not null."""

    kind: Literal["idle", "busy"]
    last_progress_s: float | None = None
    declared_s: float | None = None
    phase: Literal["compile"] | None = None  # compiling when its compile budget ran out
    job_phase: str | None = None  # the job's own phase (`hangdoctor.phase`), e.g. `train/eval`
    #: declared before the threshold because the stacks proved it: why (`analysis.proof`)
    proven: str | None = None

    @model_serializer(mode="wrap")
    def _without_unknown_times(self, handler: Any) -> dict[str, Any]:
        dumped: dict[str, Any] = handler(self)
        return {key: value for key, value in dumped.items() if value is not None}


class StackFrame(ReportModel):
    """One frame of a thread's stack, innermost first."""

    file: str
    line: int
    function: str
    code: str | None = None
    native: bool = False


class ThreadReport(ReportModel):
    """One thread: the kernel's view, what it waits on, and its stack."""

    tid: int
    name: str | None = None
    state: str | None = None
    wchan: str | None = None
    syscall: str | None = None
    waiting_on: str | None = Field(default=None, description="what the thread waits for, in words")
    cpu_percent: float | None = None
    owns_gil: bool | None = None
    active: bool | None = None
    stack: list[StackFrame] = []


class ProcessReport(ReportModel):
    """One process of the job's tree."""

    pid: int
    ppid: int | None = None
    role: Role
    rank: int | None = None
    name: str | None = None
    command: list[str] = []
    state: str = "unknown"
    cpu_percent: float | None = None
    rss_bytes: int | None = None
    python: bool = False
    stacks_read: bool = False
    threads: list[ThreadReport] = []
    host: str | None = None  # a report of several nodes: the node it runs on
    node: str | None = None  # and that node's rank (or name) in the job
    #: In a job analysed by class (`nodes.classes`): the processes it stands for.
    stands_for: RankClass | None = None


class JobSummary(ReportModel):
    """How a supervised job ran (`run` only)."""

    duration_s: float | None = None
    signal: int | None = None
    interrupted: bool = False
    killed_by_hangdoctor: bool = False
    hang_timeout_s: float | None = None
    output_bytes: int = 0
    progress: list[ProgressStatus] = []


class LogSource(ReportModel):
    """A log file `analyze` read."""

    path: str
    bytes: int
    output_lines: int
    kernel_lines: int
    truncated: bool


class CaptureInfo(ReportModel):
    """How the evidence was gathered, and what could not be."""

    target_pid: int | None = None
    samples: int = 0
    seconds_sampled: float = 0.0
    timings_s: dict[str, float] = {}
    errors: list[ProbeError] = Field(default=[], description="probes that could not do their work")
    job: JobSummary | None = None
    rule_errors: list[str] = []
    logs: list[LogSource] = []

    @model_serializer(mode="wrap")
    def _without_empty_parts(self, handler: Any) -> dict[str, Any]:
        dumped: dict[str, Any] = handler(self)
        if self.job is None:
            dumped.pop("job", None)
        if not self.logs:
            dumped.pop("logs", None)
        return dumped


class WaitFor(ReportModel):
    """One edge of the job's wait-for graph: a thread that can go on only once another party
    acts; `pid`/`tid` of that party, or none when only something outside the job (a remote
    host, the terminal, the device) or nothing at all can end the wait."""

    pid: int
    tid: int
    waits_in: str  # what it waits in, in words
    on_pid: int | None = None
    on_tid: int | None = None
    why: str  # what the other party is to it, or what could end the wait
    certain: bool = True  # False: that party only could end it (any thread may fill a queue)


class Report(ReportModel):
    """Everything a user or a script needs; see report.schema.json."""

    schema_version: Literal["1"] = "1"
    tool: Tool = Tool()
    command: list[str] = []
    verdict: Verdict
    exit_code: int | None = None
    hang: Hang | None = None
    findings: list[Finding]
    processes: list[ProcessReport]
    gpus: list[dict[str, Any]] = []
    system: SystemInfo = SystemInfo()
    capture: CaptureInfo = CaptureInfo()
    artifacts: dict[str, str] = {}
    #: The job's wait-for graph: who waits for whom (see analysis/waitgraph.py).
    wait_for: list[WaitFor] = []
    #: A job of several nodes: which nodes the report's view holds, and which it lacks.
    nodes: NodesEvidence | None = None
    #: The language of its sentences (titles, evidence, advice); ids and field names are
    #: English in every language.
    language: Language = "en"

    @property
    def root_cause(self) -> Finding | None:
        """The most likely root cause, if anything was found."""
        return self.findings[0] if self.findings else None
