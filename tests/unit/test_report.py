"""Reports built from rule examples follow the schema; the packaged schema is the contract."""

from __future__ import annotations

import json

import jsonschema
import pytest

from hangdoctor.report.model import build_report
from hangdoctor.report.render_json import render_json
from hangdoctor.report.render_markdown import render_markdown
from hangdoctor.rules.engine import diagnose
from hangdoctor.rules.registry import ALL_RULES
from tests.conftest import PACKAGE_SCHEMA, SHARED_SCHEMA


@pytest.mark.parametrize(
    "example",
    [e for rule in ALL_RULES for e in (*rule.fires_on, *rule.quiet_on)],
    ids=lambda e: e.name,
)
def test_report_follows_schema(example, report_schema):
    report = build_report(example.build(), diagnose(example.build()))
    document = json.loads(render_json(report))
    jsonschema.validate(document, report_schema)
    markdown = render_markdown(report)
    for finding in report.findings:
        assert finding.title in markdown


def test_verdict_follows_findings():
    deadlock = ALL_RULES[0].fires_on[0].build()
    assert build_report(deadlock, diagnose(deadlock)).verdict == "hung"
    quiet = ALL_RULES[0].quiet_on[0].build()
    assert build_report(quiet, diagnose(quiet)).verdict == "running"


def test_packaged_schema_matches_the_shared_contract():
    if not SHARED_SCHEMA.exists():
        pytest.skip("../shared is not beside this checkout")
    assert json.loads(PACKAGE_SCHEMA.read_text()) == json.loads(SHARED_SCHEMA.read_text())


def test_a_broken_rule_does_not_hide_the_others():
    from hangdoctor.rules.base import Rule

    class Broken(Rule):
        id = "HD999"
        category = "process.deadlock"
        summary = "always fails"

        def check(self, job):
            raise RuntimeError("boom")

    bundle = ALL_RULES[0].fires_on[0].build()
    diagnosis = diagnose(bundle, (Broken, *ALL_RULES))
    assert diagnosis.findings and diagnosis.rule_errors == ("HD999: RuntimeError: boom",)
