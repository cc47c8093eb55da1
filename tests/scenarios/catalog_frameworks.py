"""Scenarios written from public reports: Lightning, the Hugging Face Trainer and
accelerate programs."""

from __future__ import annotations

from tests.scenarios.scenario import Scenario

USERS_FRAMEWORKS: tuple[Scenario, ...] = ()
