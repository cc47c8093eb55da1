"""HD601 on a NaN livelock: the culprit is the loop that retries, judged from the samples since
the job's last progress, not from a fixed window that may still hold the last finite loss (the
hang can be declared three seconds after it)."""

from __future__ import annotations

from hangdoctor.analysis.job import JobView
from hangdoctor.evidence import build as b
from hangdoctor.evidence.model import JobRecord, ProgressStatus, TimelineSample
from hangdoctor.rules.engine import run_rules

# As recorded in the scenario nan_skip_retry: 30 finite losses, then NaN only.
SAMPLES = ((5.7, 0, 0), (6.9, 0, 0), (7.9, 0, 0), (8.9, 31, 1), (9.9, 73, 43), (10.9, 113, 83))


def _livelock(last_progress_s: float, in_generator: bool = False) -> JobView:
    frame = b.frame(
        "train.py",
        27,
        "main",
        code="loss = model(x).pow(2).mean()",
        loops=("while step < 200",),
    ).model_copy(update={"loop_lines": (22,)})
    frames = [frame]
    last_sync: tuple = ()
    if in_generator:
        # The sample caught it in the batch generator's own endless loop, called from the
        # training loop; the instrumentation saw its last backward() in the training loop.
        frames = [
            b.frame(
                "train.py", 13, "batches", code="yield torch.randn(32, 8)", loops=("while True",)
            ).model_copy(update={"loop_lines": (12,)}),
            frame.model_copy(update={"line": 23, "code": "x = next(data)"}),
        ]
        last_sync = (frame.model_copy(update={"line": 29, "code": "loss.backward()"}),)
    process = b.process(7, b.thread(7, *frames, name="MainThread", state="R", cpu=1.0))
    timeline = tuple(
        TimelineSample(elapsed_s=at, losses=losses, nonfinite_losses=bad)
        for at, losses, bad in SAMPLES
    )
    status = ProgressStatus(
        pid=7,
        updated_at=10.9,
        losses_seen=113,
        nonfinite_losses=83,
        last_nonfinite_at=10.8,
        last_sync=last_sync,
    )
    record = JobRecord(
        started_at=0.0,
        last_progress_s=last_progress_s,
        hang_declared_s=11.9,
        hang_kind="busy",
        timeline=timeline,
        progress=(status,),
    )
    return JobView(b.bundle(process).model_copy(update={"job": record}))


def test_a_nan_livelock_declared_soon_after_the_last_finite_loss_points_at_the_loop():
    findings = [f for f in run_rules(_livelock(8.895)).findings if f.id == "HD601"]
    assert findings
    [finding] = findings
    assert any("non-finite losses only" in line for line in finding.evidence)
    assert finding.culprit is not None and finding.culprit.location is not None
    assert (finding.culprit.location.line, finding.culprit.location.code) == (
        22,
        "while step < 200",
    )


def test_a_nan_livelock_sampled_inside_its_data_generator_still_points_at_the_training_loop():
    """Where the sample caught the spinning thread is chance (CI's live sample once caught it in
    the generator's `while True`); the loop that keeps stepping on NaN is the one around the
    backward() the instrumentation saw last."""
    [finding] = [
        f for f in run_rules(_livelock(8.895, in_generator=True)).findings if f.id == "HD601"
    ]
    assert finding.culprit is not None and finding.culprit.location is not None
    assert (finding.culprit.location.line, finding.culprit.location.code) == (
        22,
        "while step < 200",
    )
