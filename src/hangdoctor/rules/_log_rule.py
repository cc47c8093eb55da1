"""The rule over log lines of given kinds: it reads the job's output, and when lines of its
kinds are there, says what they mean. Each such rule names its kinds and implements `explain`;
the matching, and the silence where nothing matched, are here."""

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
    """A rule that fires on the job's output lines of its `kinds` (analysis/logs.py)."""

    reads = "logs"
    names_culprit = False
    #: The kinds of line it explains; a job whose output has none gets no finding.
    kinds: ClassVar[tuple[LogKind, ...]]

    def check(self, job: JobView) -> Iterable[Finding]:
        found = matches_of(job, *self.kinds)
        return self.explain(job, found) if found else ()

    @abstractmethod
    def explain(self, job: JobView, found: list[LogMatch]) -> Iterable[Finding]:
        """Findings for the lines found, in the order of the output (at least one)."""
