"""Every scenario of the catalog, run for real under `hangdoctor run --on-hang kill`: the verdict,
the root cause's category, the culprit's rank and line, and no process left behind.

HANGDOCTOR_SUITE_MODE=run-noptrace or watch-noptrace runs them without ptrace (`modes`); the
scenarios are skipped, with the reason, where that mode cannot run."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from tests.scenarios import modes
from tests.scenarios.catalog import CATALOG
from tests.scenarios.harness import assert_diagnosed_as_expected, run_scenario, save_outcome
from tests.scenarios.sample import LIVE_SAMPLE, MARGIN, SampleJob, measured_seconds
from tests.scenarios.scenario import Scenario


def _param(scenario: Scenario):
    marks = [pytest.mark.scenario]
    if scenario.needs_torch:
        marks.append(pytest.mark.torch)
    if scenario.xfail:
        # Not strict: a known miss that a run gets right (timing) must not fail CI; the table
        # shows it.
        marks.append(pytest.mark.xfail(reason=scenario.xfail, strict=False))
    return pytest.param(scenario, id=scenario.name, marks=marks)


@pytest.mark.parametrize("scenario", [_param(s) for s in CATALOG])
def test_scenario(scenario: Scenario, tmp_path: Path, outcomes_dir: Path) -> None:
    if scenario.needs_torch:
        pytest.importorskip("torch")
    if (why := scenario.skip_reason() or modes.unavailable(modes.current_mode())) is not None:
        pytest.skip(why)
    outcome = run_scenario(scenario, tmp_path)
    if _crashed_by_itself(scenario, outcome.verdict):
        outcome = run_scenario(scenario, tmp_path / "again")
    save_outcome(outcome, outcomes_dir)
    assert_diagnosed_as_expected(outcome)


def _crashed_by_itself(scenario: Scenario, verdict: str | None) -> bool:
    """A healthy control whose job failed by itself, with no hang declared: torch's own
    teardown aborts a gloo rank now and then at interpreter exit, with or without hangdoctor
    (SIGABRT, "terminate called without an active exception"; pytorch/pytorch#179291). The
    judgement is of hangdoctor's verdict, so such a run is tried once more; a healthy job
    declared hung is never tried again."""
    return scenario.healthy and verdict == "failed"


def _sample_param(job: SampleJob):
    marks = [pytest.mark.sample]
    if job.scenario.needs_torch:
        marks.append(pytest.mark.torch)
    return pytest.param(job, id=job.id, marks=marks)


@pytest.mark.parametrize("job", [_sample_param(j) for j in LIVE_SAMPLE])
def test_live_sample(job: SampleJob, tmp_path: Path) -> None:
    """CI's live sample (`sample.py`), one job at a time: the same judgement as the whole
    suite's, each job given at least three times its measured wall time on a loaded machine."""
    scenario = job.scenario
    if scenario.needs_torch:
        pytest.importorskip("torch")
    if (why := scenario.skip_reason() or modes.unavailable(job.mode)) is not None:
        pytest.skip(why)
    measured = measured_seconds().get(job.id)
    assert measured is not None, (
        f"{job.id} has no measured wall time: python tests/scenarios/measure_sample.py {job.id}"
    )
    limit = max(scenario.limit_s, MARGIN * measured)
    outcome = run_scenario(replace(scenario, limit_s=limit), tmp_path, job.mode)
    if _crashed_by_itself(scenario, outcome.verdict):
        outcome = run_scenario(replace(scenario, limit_s=limit), tmp_path / "again", job.mode)
    assert_diagnosed_as_expected(outcome)
