"""The doctor's checks, one module per area, found by looking: every concrete `Check` with an
`id` defined in a module of this package is run, so adding a check is adding a class.

Checks are pure functions of `Facts`: no I/O, no clock, no subprocesses; what they need, a
probe put in the facts.
"""

from __future__ import annotations

from functools import cache
from typing import get_args

from hangdoctor.discovery import find_classes
from hangdoctor.doctor.check import Check, GpuCheck
from hangdoctor.doctor.facts import Facts
from hangdoctor.doctor.result import Area, CheckResult

#: The order areas are reported in.
AREAS: tuple[Area, ...] = get_args(Area)


@cache
def all_checks() -> tuple[Check, ...]:
    """Every check, by area (in `AREAS` order) and id."""
    found = [cls() for cls in find_classes(__name__, Check, families=False)]
    return tuple(sorted(found, key=lambda c: (AREAS.index(c.area), c.id)))


def check_by_id(id: str) -> Check:
    """The check with this id (KeyError if there is none)."""
    for check in all_checks():
        if check.id == id:
            return check
    raise KeyError(id)


def run_checks(facts: Facts) -> list[CheckResult]:
    """Every check's results, area by area; within the GPU area, GPU by GPU."""
    keyed: list[tuple[tuple[int, int, str], CheckResult]] = []
    for check in all_checks():
        area = AREAS.index(check.area)
        if isinstance(check, GpuCheck):
            for device in facts.gpus.devices:
                keyed += [((area, device.index, check.id), r) for r in check.check_gpu(device)]
        else:
            keyed += [((area, -1, check.id), r) for r in check.check(facts)]
    return [result for _, result in sorted(keyed, key=lambda item: item[0])]
