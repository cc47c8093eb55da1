"""The rules over log lines: `LogRule` reads the job's output (or the kernel log) and, since a
line rarely names the process that printed it, names no culprit unless it says otherwise;
`LogKindsRule` fires where the output has lines of its kinds, and says what they mean (the
matching, and the silence where nothing matched, are here)."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Iterable
from typing import ClassVar

from hangdoctor.analysis.job import JobView
from hangdoctor.analysis.logs import LogKind, LogMatch
from hangdoctor.rules.base import Rule
from hangdoctor.rules.finding import Finding
from hangdoctor.rules.log_helpers import matches_of


class LogRule(Rule):
    """A rule that reads log lines."""

    reads = "logs"
    names_culprit = False


class LogKindsRule(LogRule):
    """A rule that fires on the job's output lines of its `kinds` (analysis/logs.py)."""

    #: The kinds of line it explains; a job whose output has none gets no finding.
    kinds: ClassVar[tuple[LogKind, ...]]

    def check(self, job: JobView) -> Iterable[Finding]:
        found = matches_of(job, *self.kinds)
        return self.explain(job, found) if found else ()

    @abstractmethod
    def explain(self, job: JobView, found: list[LogMatch]) -> Iterable[Finding]:
        """Findings for the lines found, in the order of the output (at least one)."""
