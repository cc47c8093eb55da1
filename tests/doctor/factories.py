"""Helpers for the doctor's tests: facts come from `hangdoctor.doctor.examples.node` (the healthy
node the checks' own examples start from), results are picked by id."""

from __future__ import annotations

from hangdoctor.doctor.checks import check_by_id
from hangdoctor.doctor.examples import node
from hangdoctor.doctor.facts import Facts
from hangdoctor.doctor.result import CheckResult

__all__ = ["by_id", "node", "one", "results_of"]


def results_of(id: str, facts: Facts) -> list[CheckResult]:
    """What the check with this id says about these facts."""
    return list(check_by_id(id).check(facts))


def by_id(results: list[CheckResult], id: str) -> list[CheckResult]:
    """The results of one check."""
    return [r for r in results if r.id == id]


def one(results: list[CheckResult], id: str) -> CheckResult:
    """The only result of one check."""
    found = by_id(results, id)
    assert len(found) == 1, f"{id}: {found}"
    return found[0]
