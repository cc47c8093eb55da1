"""docs/lint.md describes the rules as they are: its rules block is the one the rules
themselves generate (`python -m hangdoctor.lint.docs docs/lint.md` rewrites it)."""

from __future__ import annotations

from pathlib import Path

from hangdoctor.lint.docs import update
from hangdoctor.lint.rules import ALL_RULES

DOCS = Path(__file__).parent.parent.parent / "docs" / "lint.md"


def test_rules_block_is_up_to_date() -> None:
    text = DOCS.read_text(encoding="utf-8")
    assert update(text) == text, "run: python -m hangdoctor.lint.docs docs/lint.md"


def test_every_rule_is_documented() -> None:
    text = DOCS.read_text(encoding="utf-8")
    for rule in ALL_RULES:
        assert f"### {rule.id} `{rule.name}`" in text
        assert f"**{rule.id}**" in text, f"{rule.id} missing from 'How the rules decide'"
