"""Every scenario's recorded capture, diagnosed again: the same verdict, category, culprit rank and
culprit line as the catalogue expects. Deterministic and fast (no job runs), so it covers the whole
catalogue in CI; the live runs (`test_scenarios.py`, `run_suite.py`) stay the measurement.

A recording is made by `python tests/scenarios/record.py NAME` (see recording.py); one that is
missing or older than its program fails here, with that command in the message."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pytest

from hangdoctor.analysis.job import JobView
from hangdoctor.rules.base import Rule
from hangdoctor.rules.finding import Finding
from hangdoctor.rules.registry import ALL_RULES
from hangdoctor.taxonomy import Category
from tests.scenarios.catalog import BY_NAME, CATALOG
from tests.scenarios.harness import Outcome, assert_diagnosed_as_expected
from tests.scenarios.recording import (
    RECORDINGS,
    Recording,
    is_stale,
    judge,
    load,
    recording_path,
    replay,
)
from tests.scenarios.scenario import Scenario

pytestmark = pytest.mark.replay


def _param(scenario: Scenario):
    marks = []
    if scenario.xfail:
        # A known miss stays a miss in its recording unless the recorded run was the lucky one
        # of a timing-dependent miss: not strict, as in the live suite.
        marks.append(pytest.mark.xfail(reason=scenario.xfail, strict=False))
    return pytest.param(scenario, id=scenario.name, marks=marks)


def _recording(scenario: Scenario, tmp_path: Path) -> Recording:
    path = recording_path(scenario.name)
    if not path.is_file():
        pytest.fail(
            f"{scenario.name} has no recording: python tests/scenarios/record.py {scenario.name}"
        )
    return load(path, tmp_path)


@pytest.mark.parametrize("scenario", [_param(s) for s in CATALOG])
def test_recorded_capture_is_diagnosed_as_expected(scenario: Scenario, tmp_path: Path) -> None:
    recording = _recording(scenario, tmp_path)
    outcome = judge(scenario, replay(recording))
    assert_diagnosed_as_expected(outcome, f"; recorded {recording.recorded_at}")


def test_every_recording_is_as_new_as_its_program() -> None:
    """A program (or its launch settings) changed since its recording: the recording shows a
    job that no longer exists, so it is recorded again."""
    stale = [s.name for s in CATALOG if recording_path(s.name).is_file() and is_stale(s)]
    assert not stale, f"record these again: python tests/scenarios/record.py {' '.join(stale)}"


def test_every_recording_belongs_to_a_scenario() -> None:
    orphans = sorted(
        p.name.removesuffix(".json.xz")
        for p in RECORDINGS.glob("*.json.xz")
        if p.name.removesuffix(".json.xz") not in BY_NAME
    )
    assert not orphans, f"recordings of no scenario (remove them): {orphans}"


# --- the replay can fail -------------------------------------------------------------------------
# A replay that passes whatever the rules say proves nothing: one rule is changed on a copy of
# the rule set (its category, then its culprit's line) and the same recording must then fail.

_PROBE = "worker_remote_read"  # a hang whose root cause names a category, a line and a rule


def _mutated(rule: type[Rule], change) -> type[Rule]:
    """`rule` whose findings pass through `change`."""

    def check(self: Rule, job: JobView) -> Iterable[Finding]:
        return [change(finding) for finding in rule.check(self, job)]

    return type(f"Mutated{rule.__name__}", (rule,), {"check": check})


def _replay_with(recording: Recording, change) -> Outcome:
    scenario = BY_NAME[recording.name]
    root = replay(recording).findings[0]
    rules = [_mutated(r, change) if r.id == root.id else r for r in ALL_RULES]
    outcome = judge(scenario, replay(recording, rules=rules))
    return outcome


def test_replay_fails_when_a_rule_names_another_category(tmp_path: Path) -> None:
    recording = _recording(BY_NAME[_PROBE], tmp_path)
    assert judge(BY_NAME[_PROBE], replay(recording)).correct
    other = Category.PROCESS_UNEXPLAINED

    def recategorise(finding: Finding) -> Finding:
        return finding.model_copy(update={"category": other})

    outcome = _replay_with(recording, recategorise)
    assert outcome.category == other.value
    assert not outcome.category_ok and not outcome.correct


def test_replay_fails_when_a_rule_names_another_line(tmp_path: Path) -> None:
    recording = _recording(BY_NAME[_PROBE], tmp_path)

    def move(finding: Finding) -> Finding:
        culprit = finding.culprit
        if culprit is None or culprit.location is None:
            return finding
        moved = culprit.location.model_copy(update={"line": culprit.location.line + 1})
        return finding.model_copy(
            update={"culprit": culprit.model_copy(update={"location": moved})}
        )

    outcome = _replay_with(recording, move)
    assert outcome.category_ok
    assert outcome.location_ok is False and not outcome.correct
