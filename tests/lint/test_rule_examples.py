"""Tests generated from every lint rule's own examples: each invalid example must report
exactly that rule, at exactly the lines marked `# expect`; each valid example nothing."""

from __future__ import annotations

import pytest

from hangdoctor.lint.model import EXPECT_MARKER, LintRule, Severity
from hangdoctor.lint.rules import ALL_RULES, RULES_BY_ID
from hangdoctor.lint.runner import Linter
from hangdoctor.taxonomy import Category


def _cases(attribute: str) -> list:
    return [pytest.param(rule, n, example, id=f"{rule.id}-{attribute}-{n}")
            for rule in ALL_RULES for n, example in enumerate(getattr(rule, attribute))]


def _expected_lines(example: str) -> set[int]:
    marker = ("// " if "__global__" in example else "# ") + EXPECT_MARKER
    return {n for n, line in enumerate(example.splitlines(), start=1)
            if line.rstrip().endswith(marker)}


def _lint(rule: type[LintRule], example: str) -> list:
    """All rules run (as in real use), so a stray finding of another rule shows up too."""
    return Linter().lint_source(example, f"example.{'cu' if rule.language == 'cuda' else 'py'}",
                                rule.language)


@pytest.mark.parametrize(("rule", "n", "example"), _cases("invalid"))
def test_invalid_example_is_reported(rule: type[LintRule], n: int, example: str) -> None:
    expected = _expected_lines(example)
    assert expected, "an invalid example must mark its lines with '# expect'"
    findings = _lint(rule, example)
    mine = {f.line for f in findings if f.rule_id == rule.id}
    assert mine == expected, f"{rule.id} reported lines {sorted(mine)}, expected {expected}"
    others = [f"{f.rule_id}:{f.line}" for f in findings if f.rule_id != rule.id]
    assert not others, f"other rules fired on {rule.id}'s example: {others}"


@pytest.mark.parametrize(("rule", "n", "example"), _cases("valid"))
def test_valid_example_is_quiet(rule: type[LintRule], n: int, example: str) -> None:
    findings = _lint(rule, example)
    assert not findings, [f"{f.rule_id}:{f.line} {f.message}" for f in findings]


@pytest.mark.parametrize("rule", ALL_RULES, ids=lambda rule: rule.id)
def test_rule_contract(rule: type[LintRule]) -> None:
    assert rule.category in {c.value for c in Category}
    assert rule.valid and rule.invalid, "every rule needs examples of both kinds"
    assert rule.message and rule.fix and rule.why and rule.name
    assert isinstance(rule.severity, Severity)
    assert rule.id[:2] == "HL" and len(rule.id) == 5 and rule.id[2:].isdigit()


def test_rule_ids_are_unique() -> None:
    assert len(RULES_BY_ID) == len(ALL_RULES) + 1  # + HL000
