"""One severity scale for everything hangdoctor concludes: diagnosis findings, lint findings and
doctor checks. `error` and `critical` mean the job is (or will be) hung or broken."""

from __future__ import annotations

from enum import Enum


class Severity(str, Enum):
    """How bad a conclusion is, worst first."""

    CRITICAL = "critical"
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"

    @property
    def weight(self) -> int:
        """Higher is worse, for ranking."""
        return _WEIGHTS[self]

    @property
    def is_problem(self) -> bool:
        """Whether it means the job is hung or broken (not a warning or a note)."""
        return self.weight >= _WEIGHTS[Severity.ERROR]


_WEIGHTS = {Severity.CRITICAL: 3, Severity.ERROR: 2, Severity.WARNING: 1, Severity.INFO: 0}
