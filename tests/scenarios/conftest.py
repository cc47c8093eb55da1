"""Collects every scenario's outcome and prints the accuracy table at the end of the session,
also when pytest-xdist ran the scenarios in worker processes (outcomes are kept as files)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.scenarios.catalog import BY_NAME
from tests.scenarios.harness import load_outcomes, table

_OUTCOMES = Path(__file__).resolve().parents[2] / ".pytest_cache" / "hangdoctor-scenarios"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "scenario: a real training program run under `hangdoctor run` "
        "(tests/scenarios; deselect with -m 'not scenario')")
    if not hasattr(config, "workerinput"):  # the controlling process: start a fresh table
        shutil.rmtree(_OUTCOMES, ignore_errors=True)


@pytest.fixture(scope="session")
def outcomes_dir() -> Path:
    """Where each scenario's outcome is kept for the table."""
    return _OUTCOMES


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    if hasattr(config, "workerinput"):
        return
    outcomes = load_outcomes(_OUTCOMES, BY_NAME) if _OUTCOMES.is_dir() else []
    if outcomes:
        terminalreporter.section("hangdoctor scenario accuracy")
        terminalreporter.write_line(table(outcomes))
