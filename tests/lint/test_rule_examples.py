"""Tests generated from every lint rule's own examples: each `fires_on` example must report
exactly that rule, at exactly the lines marked `# expect`; each `quiet_on` example nothing."""

from __future__ import annotations

import inspect

import pytest

from hangdoctor.lint.model import EXPECT_MARKER, LintRule
from hangdoctor.lint.rules import ALL_RULES, RULES_BY_ID
from hangdoctor.lint.runner import Linter
from hangdoctor.severity import Severity
from hangdoctor.taxonomy import Category


def _cases(attribute: str) -> list:
    return [
        pytest.param(rule, n, example, id=f"{rule.id}-{attribute}-{n}")
        for rule in ALL_RULES
        for n, example in enumerate(getattr(rule, attribute))
    ]


def _expected_lines(example: str) -> set[int]:
    marker = ("// " if "__global__" in example else "# ") + EXPECT_MARKER
    return {
        n for n, line in enumerate(example.splitlines(), start=1) if line.rstrip().endswith(marker)
    }


def _lint(rule: type[LintRule], example: str) -> list:
    """All rules run (as in real use), so a stray finding of another rule shows up too."""
    return Linter().lint_source(
        example, f"example.{'cu' if rule.language == 'cuda' else 'py'}", rule.language
    )


@pytest.mark.parametrize(("rule", "n", "example"), _cases("fires_on"))
def test_fires_on_example_is_reported(rule: type[LintRule], n: int, example: str) -> None:
    expected = _expected_lines(example)
    assert expected, "a fires_on example must mark its lines with '# expect'"
    findings = _lint(rule, example)
    mine = {f.line for f in findings if f.rule_id == rule.id}
    assert mine == expected, f"{rule.id} reported lines {sorted(mine)}, expected {expected}"
    others = [f"{f.rule_id}:{f.line}" for f in findings if f.rule_id != rule.id]
    assert not others, f"other rules fired on {rule.id}'s example: {others}"


@pytest.mark.parametrize(("rule", "n", "example"), _cases("quiet_on"))
def test_quiet_on_example_is_quiet(rule: type[LintRule], n: int, example: str) -> None:
    findings = _lint(rule, example)
    assert not findings, [f"{f.rule_id}:{f.line} {f.message}" for f in findings]


@pytest.mark.parametrize("rule", ALL_RULES, ids=lambda rule: rule.id)
def test_rule_contract(rule: type[LintRule]) -> None:
    assert isinstance(rule.category, Category)
    assert rule.fires_on and rule.quiet_on, "every rule needs examples of both kinds"
    assert rule.message and rule.fix and rule.why and rule.name
    assert isinstance(rule.severity, Severity)
    assert rule.id[:2] == "HL" and len(rule.id) == 5 and rule.id[2:].isdigit()


def test_rule_ids_are_unique() -> None:
    assert len(RULES_BY_ID) == len(ALL_RULES) + 1  # + HL000


def test_every_rule_is_found_one_to_a_file_in_its_family_folder() -> None:
    assert [rule.id for rule in ALL_RULES] == [
        "HL101",
        "HL102",
        "HL103",
        "HL104",
        "HL201",
        "HL202",
        "HL203",
        "HL301",
        "HL302",
        "HL401",
        "HL402",
        "HL403",
        "HL501",
        "HL601",
    ]
    families = {
        "1": "distributed",
        "2": "data",
        "3": "algorithm",
        "4": "process",
        "5": "network",
        "6": "cuda",
    }
    for rule in ALL_RULES:
        package, _, _module = rule.__module__.rpartition(".")
        assert package == f"hangdoctor.lint.rules.{families[rule.id[2]]}", rule.id
        module = inspect.getmodule(rule)
        rules_here = [
            value
            for value in vars(module).values()
            if inspect.isclass(value)
            and issubclass(value, LintRule)
            and value.__module__ == rule.__module__
        ]
        assert rules_here == [rule]
