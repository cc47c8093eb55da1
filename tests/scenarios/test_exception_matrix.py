"""The exception matrix (exception_matrix.py): its programs are what the generator writes, and
`analyze` of each recorded job's output names the same exception, rank and line as `run` did
(issue 26: `analyze` and `run` agree on the same output)."""

from __future__ import annotations

import pytest

from hangdoctor.evidence.logfiles import log_bundle
from hangdoctor.evidence.model import Bundle
from hangdoctor.pipeline import Context, Mode, diagnose
from tests.scenarios.exception_matrix import FOLDER, expected_files, scenarios
from tests.scenarios.generated import out_of_date
from tests.scenarios.recording import RECORDINGS, load, recording_path, replay

pytestmark = pytest.mark.replay

CELLS = scenarios()


def test_the_programs_are_what_the_generator_writes():
    assert out_of_date(FOLDER, expected_files()) == [], (
        "run `python tests/scenarios/exception_matrix.py`"
    )


def test_every_raise_site_meets_every_form():
    wrappers = {c.name.rsplit("_", 1)[0] for c in CELLS}
    forms = {c.name.rsplit("_", 1)[1] for c in CELLS}
    assert len(CELLS) == len(wrappers) * len(forms) >= 14 * 4


def _first(report) -> tuple[str | None, int | None, str | None]:
    finding = report.findings[0] if report.findings else None
    if finding is None or finding.culprit is None:
        return (finding.category.value if finding else None), None, None
    location = finding.culprit.location
    where = f"{location.file}:{location.line}" if location is not None else None
    return finding.category.value, finding.culprit.rank, where


@pytest.mark.parametrize("cell", CELLS, ids=[c.name for c in CELLS])
def test_analyze_of_the_output_agrees_with_run(cell, tmp_path):
    recording = load(recording_path(cell.name, RECORDINGS), work_dir=tmp_path)
    ran = replay(recording)
    output = Bundle.model_validate(recording.evidence).job
    assert output is not None and output.output_tail
    analyzed = diagnose(log_bundle(output.output_tail), Context(mode=Mode.LOGS))
    assert analyzed.verdict == "failed"
    assert _first(analyzed) == _first(ran)
