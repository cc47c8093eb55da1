"""Round 6, batch a: see catalog_round6.py."""

from __future__ import annotations

from tests.scenarios.scenario import HEALTHY, Scenario

ROUND6_A: tuple[Scenario, ...] = ()
_ = HEALTHY
