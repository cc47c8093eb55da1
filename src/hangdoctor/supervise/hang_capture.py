"""What `run` does when it declares a hang: capture every process of the job (plus the ranks'
Flight Recorder, NCCL's RAS report and the kernel log), diagnose, and write `hang-N/`."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from hangdoctor.capture.from_the_job import stacks_from_the_job
from hangdoctor.capture.object_identity import identify_objects
from hangdoctor.capture.tree import CaptureOptions, capture_tree
from hangdoctor.evidence.model import Bundle, JobRecord, ProbeError
from hangdoctor.pipeline import Context, Mode, diagnose
from hangdoctor.probes.async_tasks import collect_tasks
from hangdoctor.probes.flight_recorder import collect_dumps, request_dumps
from hangdoctor.probes.gpu import GpuSampler
from hangdoctor.probes.kernel_log import read_kernel_log
from hangdoctor.probes.nccl_ras import with_nccl_ras
from hangdoctor.probes.pystacks import StackOptions
from hangdoctor.report.model import Hang, Report
from hangdoctor.supervise.policy import HangDecision

#: What a hang report concluded, to tell "still the same hang" from "the picture changed".
Signature = tuple[object, ...]


@dataclass
class HangReport:
    """One declared hang and the report written for it."""

    decision: HangDecision
    number: int
    signature: Signature
    bundle: Bundle
    report: Report
    captured_at_s: float
    failed_again: bool = False  # a capture again failed, and was said: not said every time


def signature(report: Report) -> Signature:
    """The root cause's category, culprit thread and line."""
    root = report.root_cause
    if root is None or root.culprit is None:
        return ("none",)
    location = root.culprit.location
    return (
        root.category,
        root.culprit.pid,
        root.culprit.tid,
        location.file if location else None,
        location.line if location else None,
    )


@dataclass(frozen=True)
class HangCapture:
    """What the capture needs to know about the job."""

    pid: int
    status_dir: Path | None  # the instrumentation's folder, when it runs
    ranks: int  # ranks known to the instrumentation: each is asked for its Flight Recorder
    started_wall: float
    native_stacks: bool
    gpus: GpuSampler | None = None  # the light sampler's NVML, already open
    gaps: tuple[ProbeError, ...] = ()  # what the sampler could not observe (NVML)


def capture_hang(
    job: HangCapture, decision: HangDecision, record: JobRecord
) -> tuple[Bundle, Report]:
    """Capture and diagnose the hung job (not yet written anywhere). Raises HangdoctorError
    when the tree cannot be captured at all."""
    asked = request_dumps(job.status_dir) if job.status_dir is not None else None
    bundle = capture_tree(
        job.pid, CaptureOptions(stacks=StackOptions(native=job.native_stacks)), gpus=job.gpus
    )
    if job.status_dir is not None:
        bundle = stacks_from_the_job(bundle, job.status_dir, asked)
    if asked is not None and job.status_dir is not None and job.ranks:
        records = collect_dumps(job.status_dir, asked, expected=job.ranks)
        bundle = bundle.model_copy(update={"flight_records": tuple(records)})
    if asked is not None and job.status_dir is not None:  # answered while the tree was read
        bundle = identify_objects(bundle, job.status_dir, asked)
        tasks = collect_tasks(job.status_dir, asked, bundle)
        bundle = bundle.model_copy(update={"async_tasks": tasks})
    bundle = with_nccl_ras(bundle)  # NCCL's own view of the whole job, every node included
    kernel_lines, kernel_error = read_kernel_log(since=job.started_wall - 60)
    hang_record = record.model_copy(
        update={
            "hang_declared_s": round(decision.declared_s, 3),
            "hang_kind": decision.kind,
            "hang_threshold_s": round(decision.threshold_s, 3),
            "hang_phase": decision.phase,
            "job_phase": decision.job_phase,
            "kernel_log": tuple(kernel_lines),
        }
    )
    known = {(e.probe, e.pid, e.kind) for e in bundle.errors}
    gaps = tuple(g for g in job.gaps if (g.probe, g.pid, g.kind) not in known)
    errors = bundle.errors + gaps + ((kernel_error,) if kernel_error else ())
    bundle = bundle.model_copy(update={"job": hang_record, "errors": errors})
    hang = Hang(
        kind=decision.kind,
        last_progress_s=round(decision.last_progress_s, 3),
        declared_s=round(decision.declared_s, 3),
        phase="compile" if decision.phase == "compile" else None,
        job_phase=decision.job_phase,
        proven=decision.proven,
    )
    return bundle, diagnose(bundle, Context(mode=Mode.HANG, hang=hang))
