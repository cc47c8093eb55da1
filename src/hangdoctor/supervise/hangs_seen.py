"""The hangs `run` has declared so far, each with its report, and the one in force: written by
the capture (`job_capture`), read by the watch loop, the metrics, the record and the finish."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from hangdoctor.supervise.policy import HangDecision, StillHungNotices

if TYPE_CHECKING:
    from hangdoctor.supervise.hang_capture import HangReport


@dataclass
class HangsSeen:
    """Every hang's report in the order written; `current`: the hang in force, if any."""

    reports: list[HangReport] = field(default_factory=list)
    current: HangReport | None = None
    #: When to say that the hang in force still holds; one per declared hang, kept while the
    #: picture changes and the hang is reported again.
    still_hung: StillHungNotices | None = None

    def decision(self) -> HangDecision | None:
        """The decision of the hang in force (read from another thread: the metrics)."""
        current = self.current  # read once: the loop may clear it meanwhile
        return current.decision if current is not None else None

    def declared(self, report: HangReport, again: bool) -> None:
        """A hang's report is written: a new hang, or (`again`) the one in force, changed."""
        self.reports.append(report)
        self.current = report
        if not again:
            self.still_hung = StillHungNotices(report.decision.declared_s)

    def resumed(self) -> None:
        """The job made progress again: no hang is in force."""
        self.current = None
        self.still_hung = None

    def artifacts(self) -> dict[str, str]:
        """The final report's links: the output log and each hang's report."""
        artifacts = {"log": "output.log"}
        for report in self.reports:
            artifacts[f"hang-{report.number}"] = f"hang-{report.number}/report.json"
        return artifacts
