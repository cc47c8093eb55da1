"""The categories in the code are exactly the project's taxonomy, and the README's rule tables are
exactly what the rules say about themselves."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from hangdoctor.rules.tables import BEGIN, END, rule_tables
from hangdoctor.taxonomy import Category

REPO = Path(__file__).resolve().parents[2]
TAXONOMY = REPO.parent / "shared" / "TAXONOMY.md"


@pytest.mark.skipif(not TAXONOMY.is_file(), reason="shared/TAXONOMY.md is not beside the repo")
def test_category_enum_is_the_taxonomy() -> None:
    rows = re.findall(r"^\| `([a-z_]+\.[a-z_]+)` \|", TAXONOMY.read_text(), re.MULTILINE)
    assert rows, "no categories found in TAXONOMY.md"
    assert [c.value for c in Category] == rows


def test_readme_rule_tables_are_generated_from_the_rules() -> None:
    readme = (REPO / "README.md").read_text()
    start, end = readme.index(BEGIN), readme.index(END) + len(END)
    assert readme[start:end] == rule_tables(), (
        "README's rule tables drifted from the rules: run `python -m hangdoctor.rules.tables` "
        "and paste its output between the markers")
