"""`HangsSeen`: the hangs `run` declared, the one in force, and its still-hung notices, which a
changed picture of the same hang keeps and progress ends."""

from __future__ import annotations

from hangdoctor.supervise.hang_capture import HangReport
from hangdoctor.supervise.hangs_seen import HangsSeen
from hangdoctor.supervise.policy import HangDecision


def _report(number: int, declared_s: float) -> HangReport:
    decision = HangDecision("idle", last_progress_s=0.0, declared_s=declared_s, threshold_s=5)
    return HangReport(decision, number, ("none",), None, None, declared_s)  # type: ignore[arg-type]


def test_a_hang_reported_again_keeps_its_notices_and_progress_ends_it() -> None:
    hangs = HangsSeen()
    assert hangs.decision() is None
    hangs.declared(_report(1, 20.0), again=False)
    notices = hangs.still_hung
    assert notices is not None and hangs.decision() == hangs.reports[0].decision
    hangs.declared(_report(2, 20.0), again=True)  # the picture changed: the same hang
    assert hangs.still_hung is notices and hangs.current is hangs.reports[1]
    hangs.resumed()
    assert hangs.current is None and hangs.still_hung is None and hangs.decision() is None
    hangs.declared(_report(3, 90.0), again=False)  # a new hang: notices of its own
    assert hangs.still_hung is not None and hangs.still_hung is not notices
    assert hangs.artifacts() == {
        "log": "output.log",
        "hang-1": "hang-1/report.json",
        "hang-2": "hang-2/report.json",
        "hang-3": "hang-3/report.json",
    }
