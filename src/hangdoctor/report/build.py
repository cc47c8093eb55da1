"""The typed report built from diagnosed evidence: the findings, every process and thread as
the report's model, the capture's facts and the wait-for graph's edges. The pipeline decides the
verdict and calls this; renderers then only format what it built."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pydantic import TypeAdapter

from hangdoctor.analysis.activity import hang_kind
from hangdoctor.analysis.job import JobView
from hangdoctor.analysis.waitgraph import build_wait_graph
from hangdoctor.analysis.waits import describe_wait
from hangdoctor.evidence.model import (
    Bundle,
    KernelThreadState,
    NodesEvidence,
    ProcessEvidence,
    ThreadEvidence,
)
from hangdoctor.i18n import _, active_language
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
from hangdoctor.rules.engine import Diagnosis
from hangdoctor.rules.finding import Culprit, Finding


def _percent(share: float | None) -> float | None:
    return round(share * 100, 1) if share is not None else None


def _thread(job: JobView, process: ProcessEvidence, thread: ThreadEvidence) -> dict[str, object]:
    kernel, python = thread.kernel, thread.python
    return {
        "tid": thread.tid,
        "name": (python.name if python else None) or thread.comm,
        "state": kernel.state if kernel else None,
        "wchan": kernel.wchan if kernel else None,
        "syscall": _syscall(kernel) if kernel else None,
        "waiting_on": describe_wait(job, process, thread).summary,
        "cpu_percent": _percent(job.thread_cpu_share(process.pid, thread.tid)),
        "owns_gil": python.owns_gil if python else None,
        "active": python.active if python else None,
        "stack": [
            {
                "file": f.file,
                "line": f.line,
                "function": f.function,
                "code": f.code,
                "native": f.native,
            }
            for f in (python.frames if python else ())
        ],
    }


def _processes(job: JobView) -> list[ProcessReport]:
    """Every process as the report's model. Built as plain data and validated in one pass
    (in pydantic's core): a job of thousands of ranks has tens of thousands of frames."""
    return _PROCESSES.validate_python(
        [
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
                "host": process.host,
                "node": process.node,
                "stands_for": process.rank_class
                if process.rank_class is not None and process.rank_class.size > 1
                else None,
            }
            for process in job.processes
        ]
    )


_PROCESSES = TypeAdapter(list[ProcessReport])


def _wait_for(job: JobView) -> list[WaitFor]:
    """The wait-for graph as the report's edges: who each waiting thread waits for, or what
    outside the job (or nothing) could end its wait."""
    graph = build_wait_graph(job)
    edges: list[WaitFor] = []
    for party, wait in graph.waits.items():
        pid, tid = party
        for edge in graph.edges.get(party, []):
            edges.append(
                WaitFor(
                    pid=pid,
                    tid=tid,
                    waits_in=wait.summary,
                    on_pid=edge.waited[0],
                    on_tid=edge.waited[1],
                    why=edge.why,
                    certain=edge.certain,
                )
            )
        # No thread of the job to wait for: what outside it could end the wait, or nothing.
        ends = []
        if party in graph.outside:
            ends.append(_("only this can end it: {what}", what=graph.outside[party]))
        if party in graph.nobody:
            ends.append(_("nothing can end it: {why}", why=graph.nobody[party]))
        edges += (WaitFor(pid=pid, tid=tid, waits_in=wait.summary, why=why) for why in ends)
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


def build_report(
    job: JobView,
    diagnosis: Diagnosis,
    verdict: Verdict,
    *,
    hang: Hang | None = None,
    exit_code: int | None = None,
    logs: Sequence[LogSource] = (),
    artifacts: Mapping[str, str] | None = None,
) -> Report:
    """The typed report for evidence already diagnosed, once the verdict is decided."""
    bundle = job.bundle
    if hang is None and verdict == "hung":
        hang = Hang(kind=hang_kind(job))
    findings = list(diagnosis.findings)
    if bundle.nodes is not None:
        findings = [_on_its_node(job, finding) for finding in findings]
    return Report(
        command=list(bundle.job.command if bundle.job else bundle.command),
        verdict=verdict,
        exit_code=exit_code,
        hang=hang,
        findings=findings,
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
            logs=list(logs),
        ),
        artifacts=dict(artifacts or {}),
        wait_for=_wait_for(job) if verdict in ("hung", "running") else [],
        nodes=_listed_nodes(bundle.nodes, findings),
        language=active_language(),
    )


#: A report lists every node up to this many; beyond, those that matter and a count.
LISTED_NODES = 64


def _listed_nodes(nodes: NodesEvidence | None, findings: Sequence[Finding]) -> NodesEvidence | None:
    """The nodes a reader needs, in a report that stays readable at 16,384 nodes: all of them
    in a small job; else this node, the first few, those that did not answer and those that
    hold a culprit, with how many others answered."""
    if nodes is None or len(nodes.nodes) <= LISTED_NODES:
        return nodes
    culprits = {
        c.node
        for f in findings
        for c in (f.culprit, *f.related)
        if c is not None and c.node is not None
    }
    first = {n.node for n in nodes.nodes[:8]}
    listed = tuple(
        n
        for n in nodes.nodes
        if not n.answered or n.node in culprits or n.node == nodes.this_node or n.node in first
    )
    omitted = len(nodes.nodes) - len(listed)
    return nodes.model_copy(update={"nodes": listed, "omitted": nodes.omitted + omitted})


def _on_its_node(job: JobView, finding: Finding) -> Finding:
    """A finding of a view merged from several nodes, its culprits named with their host and
    the pid they have there."""

    def placed(culprit: Culprit) -> Culprit:
        process = job.process(culprit.pid)
        if process is None or (process.host is None and process.node is None):
            return culprit
        pid = process.host_pid if process.host_pid is not None else culprit.pid
        return culprit.model_copy(update={"host": process.host, "node": process.node, "pid": pid})

    return finding.model_copy(
        update={
            "culprit": placed(finding.culprit) if finding.culprit is not None else None,
            # once each: the ranks of a class (`nodes.classes`) share their process
            "related": tuple(dict.fromkeys(placed(c) for c in finding.related)),
        }
    )


def _syscall(kernel: KernelThreadState) -> str | None:
    """The system call a thread is in: its name, or its number where no name is known (a
    thread caught in a call the table leaves out, such as the rename of an atomic write)."""
    if kernel.syscall_name:
        return kernel.syscall_name
    return _("syscall {syscall}", syscall=kernel.syscall) if kernel.syscall is not None else None
