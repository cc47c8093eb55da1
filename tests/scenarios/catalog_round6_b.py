"""Round 6, batch b: see catalog_round6.py."""

from __future__ import annotations

from tests.scenarios.scenario import HEALTHY, Scenario

ROUND6_B: tuple[Scenario, ...] = ()
_ = HEALTHY
