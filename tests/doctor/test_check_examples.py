"""Tests generated from every doctor check's own examples: each must report where it says it
reports, with the status it says, and stay calm where it says it stays calm."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from hangdoctor.doctor.check import ALARMS, CALM, Check, Example
from hangdoctor.doctor.checks import AREAS, all_checks
from hangdoctor.doctor.result import CheckResult

DOCS = Path(__file__).parents[2] / "docs" / "doctor.md"
#: The hundreds digit of an id names its area: DR1xx versions, ..., DR7xx self-tests.
ID_AREA = {str(number): area for number, area in enumerate(AREAS, start=1)}
_STATUS_RANK = {"ok": 0, "skipped": 1, "info": 2, "warn": 3, "problem": 4}


def _cases(attribute: str) -> list[object]:
    return [
        pytest.param(check, example, id=f"{check.id}-{example.name}")
        for check in all_checks()
        for example in getattr(check, attribute)
    ]


def _worst(results: list[CheckResult]) -> str | None:
    return max((r.status for r in results), key=_STATUS_RANK.__getitem__, default=None)


def _results(check: Check, example: Example) -> list[CheckResult]:
    results = list(check.check(example.facts()))
    for result in results:
        assert (result.id, result.area) == (check.id, check.area)
        # What --json writes must read back as the same result.
        assert CheckResult.model_validate_json(result.model_dump_json()) == result
    return results


@pytest.mark.parametrize(("check", "example"), _cases("fires_on"))
def test_check_fires(check: Check, example: Example) -> None:
    results = _results(check, example)
    assert _worst(results) == example.status, results
    for result in results:
        if result.status in ALARMS:
            # A warning or a problem always says what was wanted, why and how to fix it.
            assert result.found and result.wanted and result.why and result.fix, result


@pytest.mark.parametrize(("check", "example"), _cases("quiet_on"))
def test_check_stays_quiet(check: Check, example: Example) -> None:
    results = _results(check, example)
    assert _worst(results) == example.status, results


@pytest.mark.parametrize("check", all_checks(), ids=lambda check: check.id)
def test_check_contract(check: Check) -> None:
    assert re.fullmatch(r"DR[1-7]\d\d", check.id)
    assert ID_AREA[check.id[2]] == check.area
    assert type(check).__module__ == f"hangdoctor.doctor.checks.{check.area}"
    assert check.summary and check.quiet_on, "every check needs a summary and calm examples"
    if check.informs_only:
        assert not check.fires_on
    else:
        assert check.fires_on, "a check that can warn needs examples where it does"
    assert all(e.status in ALARMS for e in check.fires_on)
    assert all(e.status in CALM for e in check.quiet_on)
    names = [e.name for e in (*check.fires_on, *check.quiet_on)]
    assert len(names) == len(set(names))


def test_check_ids_are_unique() -> None:
    ids = [check.id for check in all_checks()]
    assert len(ids) == len(set(ids))


def test_every_module_of_the_package_is_an_area_with_checks() -> None:
    found = {check.area for check in all_checks()}
    assert found == set(AREAS)


def test_docs_list_every_check_as_it_describes_itself() -> None:
    rows = re.findall(r"^\| (DR\d{3}) \| (\w+) \| (.+) \|$", DOCS.read_text(), re.MULTILINE)
    documented = {id: (area, summary) for id, area, summary in rows}
    assert documented == {c.id: (c.area, c.summary) for c in all_checks()}
