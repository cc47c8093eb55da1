"""Evidence bundles from outside (`hangdoctor analyze DIR`, possibly edited, truncated or from
another version): either a one-line BadInputError or a report, never a crash."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hangdoctor.errors import BadInputError
from hangdoctor.evidence.store import load_bundle
from hangdoctor.pipeline import diagnose
from hangdoctor.report.render_json import render_json
from hangdoctor.report.render_markdown import render_markdown
from hangdoctor.rules.registry import ALL_RULES
from tests.fuzz.strategies import mutated

# Real bundles to start from: the first example of every rule (live captures, runs, logs,
# distributed jobs, GPU evidence), serialised as analyze would read them.
SEEDS = [
    json.loads(example.build().model_dump_json())
    for rule in ALL_RULES
    for example in rule.fires_on[:1]
]


def _analyze(tmp_path: Path, text: str) -> None:
    path = tmp_path / "evidence.json"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    try:
        bundle = load_bundle(path)
    except BadInputError as error:
        assert "\n" not in error.message
        return
    report = diagnose(bundle)
    render_json(report)
    render_markdown(report)


@settings(
    max_examples=2500,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(data=st.data())
def test_mutated_bundles_never_crash_analyze(tmp_path, data):
    seed = data.draw(st.sampled_from(SEEDS))
    _analyze(tmp_path, json.dumps(data.draw(mutated(seed))))


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(cut=st.floats(0.0, 1.0), seed=st.sampled_from(SEEDS))
def test_truncated_bundles_are_a_one_line_error(tmp_path, cut, seed):
    text = json.dumps(seed)
    _analyze(tmp_path, text[: int(len(text) * cut)])


@pytest.mark.parametrize("content", [b"", b"\x00" * 64, b"[]", b"null", b"{}", b"\xff\xfe{"])
def test_degenerate_evidence_files(tmp_path, content):
    path = tmp_path / "evidence.json"
    path.write_bytes(content)
    with pytest.raises(BadInputError):
        load_bundle(path)
