"""The doctor's verdicts: one `CheckResult` per thing checked, and the exit code they imply."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Status = Literal["ok", "info", "warn", "problem", "skipped"]
Area = Literal["versions", "os_limits", "kernel_log", "libraries", "gpu", "distributed",
               "selftest"]

#: How bad each status is; the exit code follows the worst one.
SEVERITY: dict[str, int] = {"skipped": 0, "ok": 0, "info": 0, "warn": 1, "problem": 2}


class CheckResult(BaseModel):
    """One check's outcome. Every field but `source` is always present in the JSON."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(description="stable id, e.g. DR205; users' scripts match on it")
    area: Area
    status: Status
    title: str
    found: str = Field(default="", description="the value observed")
    wanted: str = Field(default="", description="the value that avoids the problem")
    why: str = Field(default="", description="why it matters for hangs")
    fix: str = Field(default="", description="the exact command (or change) that fixes it")
    source: str | None = Field(default=None, description="where the rule comes from")


def exit_code(results: list[CheckResult] | tuple[CheckResult, ...]) -> int:
    """0 all well, 1 warnings only, 2 problems found."""
    return max((SEVERITY[r.status] for r in results), default=0)


def overall(results: list[CheckResult] | tuple[CheckResult, ...]) -> str:
    """`ok`, `warn` or `problem`: the worst status among the results."""
    return ("ok", "warn", "problem")[exit_code(results)]
