"""Tests generated from every rule's own examples: each must fire where it says it fires and
stay quiet where it says it stays quiet, its findings taken as the engine keeps them (after the
rule gives way to the rules it defers to, `Rule.defers_to`, or that supersede it)."""

from __future__ import annotations

import pytest

from hangdoctor.analysis.job import JobView
from hangdoctor.evidence.model import Bundle
from hangdoctor.rules.base import Rule
from hangdoctor.rules.engine import findings_of
from hangdoctor.rules.examples import Example
from hangdoctor.rules.registry import ALL_RULES
from hangdoctor.taxonomy import Category


def _cases(attribute: str) -> list:
    return [
        pytest.param(rule, example, id=f"{rule.id}-{example.name}")
        for rule in ALL_RULES
        for example in getattr(rule, attribute)
    ]


@pytest.mark.parametrize(("rule", "example"), _cases("fires_on"))
def test_rule_fires(rule: type[Rule], example: Example) -> None:
    findings = findings_of(rule, JobView(example.build()))
    assert findings, f"{rule.id} stayed quiet on '{example.name}'"
    for finding in findings:
        assert finding.id == rule.id
        assert finding.category == rule.category
        if rule.names_culprit:
            assert finding.culprit is not None and finding.culprit.pid is not None
        assert finding.evidence and finding.fixes
        # Round-trips through JSON: analyze must be able to read what dump wrote.
        assert type(finding).model_validate_json(finding.model_dump_json()) == finding


@pytest.mark.parametrize(("rule", "example"), _cases("quiet_on"))
def test_rule_stays_quiet(rule: type[Rule], example: Example) -> None:
    findings = findings_of(rule, JobView(example.build()))
    assert not findings, f"{rule.id} fired on '{example.name}': {findings[0].title}"


@pytest.mark.parametrize("rule", ALL_RULES, ids=lambda rule: rule.id)
def test_rule_contract(rule: type[Rule]) -> None:
    assert isinstance(rule.category, Category)
    assert rule.fires_on and rule.quiet_on, "every rule needs examples of both kinds"
    assert rule.summary and rule.fires_when
    # A rule lives in the folder of its category's family: rules/<family>/<rule>.py
    assert rule.__module__.split(".")[2] == rule.category.family, rule.__module__


def test_rule_ids_are_unique() -> None:
    ids = [rule.id for rule in ALL_RULES]
    assert len(ids) == len(set(ids))


def test_examples_survive_a_json_round_trip() -> None:
    for rule in ALL_RULES:
        for example in (*rule.fires_on, *rule.quiet_on):
            bundle = example.build()
            assert Bundle.model_validate_json(bundle.model_dump_json()) == bundle
