"""A real run's evidence in which a child process's traceback was split by its parent's
unfinished stdout line: the death is still read, and the report names the line that raised,
not only the parent's wait (recorded in CI's scenario run of `u_mp_tokenizer_bad_record.py`,
where `print()`'s text and newline went out apart and the child's stderr landed between)."""

from __future__ import annotations

from hangdoctor.evidence.model import Bundle
from hangdoctor.pipeline import diagnose
from tests.conftest import FIXTURES

RECORDED = FIXTURES / "mp_child_died_split_line.run.evidence.json"


def test_the_split_traceback_still_names_the_child_that_died_and_its_line():
    bundle = Bundle.model_validate_json(RECORDED.read_text())
    assert any(
        "shards  File " in line for line in (bundle.job.output_tail if bundle.job else ())
    ), "the recording no longer holds the split line"
    report = diagnose(bundle)
    top = report.findings[0]
    # A multiprocessing.Queue is a pipe: the sink table names a pipe whose writer died blocked
    # I/O (`analysis.sink_category`).
    assert top.category == "process.blocked_io"
    assert "UnicodeDecodeError" in top.title
    assert top.culprit is not None and top.culprit.location is not None
    assert top.culprit.location.file.endswith("u_mp_tokenizer_bad_record.py")
    assert top.culprit.location.line == 40
