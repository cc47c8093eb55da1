"""The doctor's verdicts: one `CheckResult` per thing checked, and the exit code they imply."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from hangdoctor.errors import ExitCode
from hangdoctor.severity import Severity

Status = Literal["ok", "info", "warn", "problem", "skipped"]
Area = Literal["versions", "os_limits", "kernel_log", "libraries", "gpu", "distributed", "selftest"]

#: Each status on the scale every hangdoctor conclusion shares.
SEVERITY_OF: dict[Status, Severity] = {
    "problem": Severity.ERROR,
    "warn": Severity.WARNING,
    "info": Severity.INFO,
    "ok": Severity.INFO,
    "skipped": Severity.INFO,
}


class CheckResult(BaseModel):
    """One check's outcome. Every field but `source` is always present in the JSON."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(description="stable id, e.g. DR205; users' scripts match on it")
    area: Area
    status: Status
    severity: Severity = Field(
        default=Severity.INFO,
        description="`status` on hangdoctor's shared severity scale; always derived from it",
    )
    title: str
    found: str = Field(default="", description="the value observed")
    wanted: str = Field(default="", description="the value that avoids the problem")
    why: str = Field(default="", description="why it matters for hangs")
    fix: str = Field(default="", description="the exact command (or change) that fixes it")
    source: str | None = Field(default=None, description="where the rule comes from")

    @model_validator(mode="before")
    @classmethod
    def _severity_follows_status(cls, data: object) -> object:
        """Fill `severity` from `status`, and refuse a document where the two disagree."""
        if not isinstance(data, dict) or data.get("status") not in SEVERITY_OF:
            return data  # field validation reports what is wrong
        derived = SEVERITY_OF[data["status"]]
        given = data.get("severity", derived)
        if given != derived:
            raise ValueError(
                f"severity {given!r} does not match status {data['status']!r} "
                f"(expected {derived.value!r})"
            )
        return {**data, "severity": derived}


def exit_code(results: Sequence[CheckResult], *, strict: bool = False) -> ExitCode:
    """PROBLEM_FOUND when a check found a problem (with `strict`, a warning too), else OK."""
    worst = max((r.severity for r in results), key=lambda s: s.weight, default=Severity.INFO)
    if worst.is_problem or (strict and worst is Severity.WARNING):
        return ExitCode.PROBLEM_FOUND
    return ExitCode.OK


def overall(results: Sequence[CheckResult]) -> Literal["ok", "warn", "problem"]:
    """`ok`, `warn` or `problem`: the worst status among the results."""
    statuses = {r.status for r in results}
    return "problem" if "problem" in statuses else "warn" if "warn" in statuses else "ok"
