"""The scenarios' shared fixture: where each outcome is kept for the accuracy table, which the
root conftest prints (under pytest-xdist only the root conftest is loaded in the process that
prints the summary)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scenarios.harness import session_outcomes_dir


@pytest.fixture(scope="session")
def outcomes_dir() -> Path:
    """Where each scenario's outcome is kept for the table (one folder per mode)."""
    return session_outcomes_dir()
