"""Checks: pure functions from `Facts` to `CheckResult`s, one module per area. No I/O, no
clock, no subprocesses: what they need, a probe put in the facts."""

from __future__ import annotations

from collections.abc import Callable

from hangdoctor.doctor.checks import (
    distributed,
    gpu,
    kernel_log,
    libraries,
    os_limits,
    selftest,
    versions,
)
from hangdoctor.doctor.facts import Facts
from hangdoctor.doctor.result import CheckResult

AREAS: tuple[Callable[[Facts], list[CheckResult]], ...] = (
    versions.check,
    os_limits.check,
    kernel_log.check,
    libraries.check,
    gpu.check,
    distributed.check,
    selftest.check,
)


def run_checks(facts: Facts) -> list[CheckResult]:
    """Every check's results, area by area, in a stable order."""
    return [result for area in AREAS for result in area(facts)]
