"""Reports built from rule examples follow the schema; the packaged schema is the contract."""

from __future__ import annotations

import json

import jsonschema
import pytest

from hangdoctor.analysis.job import JobView
from hangdoctor.pipeline import diagnose
from hangdoctor.report.render_json import render_json
from hangdoctor.report.render_markdown import render_markdown
from hangdoctor.rules.engine import run_rules
from hangdoctor.rules.registry import ALL_RULES
from hangdoctor.taxonomy import Category
from tests.conftest import PACKAGE_SCHEMA, SHARED_SCHEMA


@pytest.mark.parametrize(
    "example",
    [e for rule in ALL_RULES for e in (*rule.fires_on, *rule.quiet_on)],
    ids=lambda e: e.name,
)
def test_report_follows_schema(example, report_schema):
    report = diagnose(example.build())
    document = json.loads(render_json(report))
    jsonschema.validate(document, report_schema)
    markdown = render_markdown(report)
    for finding in report.findings:
        assert finding.title in markdown


def test_verdict_follows_findings():
    deadlock = ALL_RULES[0].fires_on[0].build()
    assert diagnose(deadlock).verdict == "hung"
    quiet = ALL_RULES[0].quiet_on[0].build()
    assert diagnose(quiet).verdict == "running"


def test_packaged_schema_matches_the_shared_contract():
    if not SHARED_SCHEMA.exists():
        pytest.skip("../shared is not beside this checkout")
    assert json.loads(PACKAGE_SCHEMA.read_text()) == json.loads(SHARED_SCHEMA.read_text())


def test_a_broken_rule_does_not_hide_the_others():
    from hangdoctor.rules.base import Rule

    class Broken(Rule):
        id = "HD999"
        category = Category.PROCESS_DEADLOCK
        summary = "always fails"
        fires_when = "never"
        reads = "capture"

        def check(self, job):
            raise RuntimeError("boom")

    bundle = ALL_RULES[0].fires_on[0].build()
    diagnosis = run_rules(JobView(bundle), (Broken, *ALL_RULES))
    assert diagnosis.findings and diagnosis.rule_errors == ("HD999: RuntimeError: boom",)
