"""Diagnosis on evidence recorded on a real H200 (`benchmarks/gpu_checks.py`, 2026-11-30; torch
2.11.0+cu130, driver 580.159.04): the bundles `hangdoctor run` and `dump` saved there, read back
and diagnosed here, where CI has no GPU. The jobs' sources as they ran are beside the bundles;
tests/fixtures/gpu/h200/gpu_checks.md is that run's table."""

from __future__ import annotations

from pathlib import Path

import pytest

from hangdoctor.evidence.model import Bundle
from hangdoctor.pipeline import Context, Mode, diagnose
from hangdoctor.report.model import Report
from tests.conftest import FIXTURES, hang_line

H200 = FIXTURES / "gpu" / "h200"


def diagnosed(name: str, ended: bool = False) -> Report:
    """The bundle's report: at the hang, or (`ended`) as the job that failed ended, the way
    `run` makes its final report."""
    bundle = Bundle.model_validate_json((H200 / f"{name}.evidence.json").read_text())
    if not ended:
        return diagnose(bundle)
    assert bundle.job is not None and bundle.job.exit_code not in (None, 0)
    return diagnose(
        bundle, Context(mode=Mode.ENDED, verdict="failed", exit_code=bundle.job.exit_code)
    )


def at(report: Report, job: str, label: str, index: int = 0) -> bool:
    """Whether finding `index` points at the line of `job` marked `# HANG: label`."""
    finding = report.findings[index]
    location = finding.culprit.location if finding.culprit else None
    return (
        location is not None
        and Path(location.file or "").name == job
        and location.line == hang_line(f"gpu/h200/{job}", label)
    )


@pytest.mark.parametrize("name", ["kernel_hang.run", "kernel_hang.dump_native"])
def test_a_kernel_that_never_ends_is_named_at_the_item_line(name: str) -> None:
    report = diagnosed(name)
    assert report.verdict == "hung"
    assert report.findings[0].id == "HD402"
    assert report.findings[0].category == "gpu.kernel_hang"
    assert at(report, "kernel_never_ends.py", "item")
    assert "HD104" not in {f.id for f in report.findings}  # the host's wait is no busy loop


def test_cuda_out_of_memory_names_the_line_its_traceback_names() -> None:
    report = diagnosed("keeps_graph_oom.run", ended=True)
    assert report.findings[0].id == "HD401"
    assert at(report, "keeps_graph_oom.py", "oom")


def test_two_nccl_ranks_on_one_gpu_quote_nccls_message() -> None:
    report = diagnosed("duplicate_gpu.run", ended=True)
    first = report.findings[0]
    assert first.id == "HD355"
    assert "Ranks 0 and 1" in first.title and "CUDA device" in first.title
    assert any("Duplicate GPU detected" in line for line in first.evidence)
    assert at(report, "collective_error.py", "collective")


def test_full_gpu_memory_is_context_for_a_queue_wait_not_its_cause() -> None:
    report = diagnosed("memory_then_queue.run")
    assert report.verdict == "hung"
    assert at(report, "memory_then_queue.py", "get")
    assert report.findings[0].category != "gpu.memory_exhausted"
    memory = next(f for f in report.findings if f.id == "HD403")
    assert memory.severity == "warning"


def test_a_nan_retry_loop_on_the_gpu_is_named_in_its_loop() -> None:
    report = diagnosed("nan_retry.run")
    first = report.findings[0]
    assert report.verdict == "hung"
    assert first.category == "algorithm.nonfinite"
    assert first.culprit is not None and first.culprit.location is not None
    assert Path(first.culprit.location.file or "").name == "nan_retry.py"
    assert any("while True" in line for line in first.evidence)
