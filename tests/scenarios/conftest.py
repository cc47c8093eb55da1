"""Collects every scenario's outcome and prints the accuracy table at the end of the session."""

from __future__ import annotations

import pytest

from tests.scenarios.harness import Outcome, table

_OUTCOMES = pytest.StashKey[list]()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "scenario: a real training program run under `hangdoctor run` "
        "(tests/scenarios, ~5 minutes in all; deselect with -m 'not scenario')")


@pytest.fixture(scope="session")
def scenario_outcomes(request: pytest.FixtureRequest) -> list[Outcome]:
    """The outcomes of the scenarios run in this session, in order."""
    return request.config.stash.setdefault(_OUTCOMES, [])


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    outcomes = config.stash.get(_OUTCOMES, [])
    if outcomes:
        terminalreporter.section("hangdoctor scenario accuracy")
        terminalreporter.write_line(table(outcomes))
