"""Scenarios written from public reports: plain DDP, FSDP, mp.spawn, multiprocessing and
single-process programs."""

from __future__ import annotations

from tests.scenarios.scenario import Scenario

USERS_DDP: tuple[Scenario, ...] = ()
