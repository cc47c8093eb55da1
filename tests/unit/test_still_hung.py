"""`run --on-hang report` keeps a hung job and looks at it again and again; what it tells the
user backs off: `still hung` after 1, 5, 15 and 60 minutes, then hourly, on a fake clock."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest

from hangdoctor.supervise.failure_watch import FailureWatch
from hangdoctor.supervise.hang_capture import HangReport
from hangdoctor.supervise.hangs_seen import HangsSeen
from hangdoctor.supervise.job_capture import JobCapture
from hangdoctor.supervise.job_record import JobRecorder
from hangdoctor.supervise.policy import (
    HangDecision,
    HangPolicy,
    ProgressTracker,
    StillHungNotices,
)
from hangdoctor.supervise.supervisor import RunOptions
from hangdoctor.supervise.watch_loop import Interrupts, WatchLoop


@dataclass
class QuietSampler:
    """A job that shows nothing: no activity, no training events."""

    timeline: list[object] = field(default_factory=list)
    statuses: list[object] = field(default_factory=list)  # no process says it is in a phase

    def activity(self, window_s: float | None = None) -> None:
        return None


@dataclass
class QuietLog:
    total_bytes: int = 0


def test_still_hung_is_said_backing_off_while_the_job_is_captured_again(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    hangs = HangsSeen()
    recorder = JobRecorder(
        command=("train",),
        started_wall=0.0,
        status_dir=None,
        sampler=QuietSampler(),  # type: ignore[arg-type]
        tracker=ProgressTracker(HangPolicy(hang_timeout_s=5)),
        log=QuietLog(),  # type: ignore[arg-type]
        failure_watch=FailureWatch(None),
        hangs=hangs,
    )
    capture = JobCapture(0, tmp_path, recorder, None, native_stacks=False, ending_job=False)
    options = RunOptions(command=("train",), report_dir=tmp_path)
    loop = WatchLoop(options, None, 0.0, capture, Interrupts())  # type: ignore[arg-type]
    declared = 20.0
    decision = HangDecision("idle", last_progress_s=0.0, declared_s=declared, threshold_s=5)
    # The hang as the first capture left it: declared, its report written, notices to come.
    hangs.current = HangReport(decision, 1, ("none",), None, None, declared)  # type: ignore[arg-type]
    hangs.still_hung = StillHungNotices(declared)
    recaptures: list[float] = []

    def capture_again(decision: HangDecision, now: float, again: bool) -> None:
        assert again and hangs.current is not None
        recaptures.append(now)
        hangs.current.captured_at_s = now  # the same picture: nothing new to report

    monkeypatch.setattr(capture, "hang", capture_again)
    now = declared
    while now < declared + 2 * 3600:  # two hours of ticks, a second apart
        now += 1.0
        loop._check_progress(now)
    said = [line for line in capsys.readouterr().err.splitlines() if "still hung" in line]
    assert said == [
        f"hangdoctor: still hung {n} minute{'s' * (n > 1)} after the hang was declared "
        f"(report: {tmp_path / 'hang-1' / 'report.md'})"
        for n in (1, 5, 15, 60)
    ] + [
        "hangdoctor: still hung 2 hours after the hang was declared "
        f"(report: {tmp_path / 'hang-1' / 'report.md'})"
    ]
    # The job is still looked at as often as before: only the notices back off.
    assert len(recaptures) >= 2 * 3600 / 10 - 1
