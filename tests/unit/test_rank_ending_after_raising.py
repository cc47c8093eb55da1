"""A rank whose main thread raised is ending, whatever its exit path waits in: here process 1
of a two-process JAX job raised at a step, and its atexit `jax.distributed.shutdown()` waits in
the shutdown barrier for process 0, which waits in the step's all-gather (recorded live: issue
30's corpus, `jx_rank_raise_shutdown`). The rank that raised exited the training; its barrier is
no collective the others skipped (not uneven inputs). An exception recorded only once the hang
was declared (as the job was ended) says nothing of the hang."""

from __future__ import annotations

from pathlib import Path

from hangdoctor.taxonomy import Category
from tests.scenarios.recording import load, recording_path, replay

RECORDED = recording_path("jx_rank_raise_shutdown")


def test_the_rank_that_raised_is_gone_at_its_raise_line(tmp_path: Path) -> None:
    root = replay(load(RECORDED, tmp_path)).findings[0]
    assert root.category is Category.DISTRIBUTED_RANK_EXITED
    assert root.culprit is not None and root.culprit.rank == 1
    assert root.culprit.location is not None
    assert root.culprit.location.file.endswith("jx_rank_raise_shutdown.py")
    assert "raise ValueError" in (root.culprit.location.code or "")
    assert any("raised ValueError" in line for line in root.evidence)


def test_an_exception_recorded_after_the_hang_was_declared_is_not_why(tmp_path: Path) -> None:
    recording = load(RECORDED, tmp_path)
    job = recording.evidence["job"]
    declared_at = job["started_at"] + job["hang_declared_s"]
    for uncaught in job["uncaught"]:
        uncaught["at"] = declared_at + 1.0
    root = replay(recording).findings[0]
    assert root.category is not Category.DISTRIBUTED_RANK_EXITED


def test_a_tensorflow_worker_idle_in_its_step_waits_for_the_worker_that_raised(
    tmp_path: Path,
) -> None:
    """Two MultiWorkerMirroredStrategy workers (recorded live: `tf_mwms_worker_dies`): worker 1
    raised at a step and is gone; worker 0 sits idle in its tf.function step, whose all-reduce
    needs worker 1. The worker that raised is the culprit, at its raise."""
    root = replay(load(recording_path("tf_mwms_worker_dies"), tmp_path)).findings[0]
    assert root.category is Category.DISTRIBUTED_RANK_EXITED
    assert root.culprit is not None and root.culprit.rank == 1
    assert root.culprit.location is not None
    assert "raise ValueError" in (root.culprit.location.code or "")
    assert any("tf.function step" in line for line in root.evidence)
