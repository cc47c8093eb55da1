"""Round 6, batch c: see catalog_round6.py."""

from __future__ import annotations

from tests.scenarios.scenario import HEALTHY, Scenario

ROUND6_C: tuple[Scenario, ...] = ()
_ = HEALTHY
