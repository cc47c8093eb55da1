"""The categories in the code are exactly the project's taxonomy, whose copy in docs/ is the
shared one (the rule pages, not the README, carry the rule tables: tests/unit/test_rule_docs.py)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from hangdoctor.taxonomy import Category

REPO = Path(__file__).resolve().parents[2]
VENDORED = REPO / "docs" / "TAXONOMY.md"
SHARED = REPO.parent / "shared" / "TAXONOMY.md"


def test_category_enum_is_the_taxonomy() -> None:
    rows = re.findall(r"^\| `([a-z_]+\.[a-z_]+)` \|", VENDORED.read_text(), re.MULTILINE)
    assert rows, "no categories found in docs/TAXONOMY.md"
    assert [c.value for c in Category] == rows


@pytest.mark.skipif(not SHARED.is_file(), reason="../shared/TAXONOMY.md is not beside the repo")
def test_vendored_taxonomy_is_the_shared_one() -> None:
    assert VENDORED.read_text() == SHARED.read_text(), (
        "docs/TAXONOMY.md differs from ../shared/TAXONOMY.md: copy the shared one"
    )
