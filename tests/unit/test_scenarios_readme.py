"""tests/scenarios/README.md is exactly what the last recorded run says (never edited by hand),
and its totals are those of its own table."""

from __future__ import annotations

import re

from tests.scenarios import write_readme


def test_scenarios_readme_is_generated_from_the_last_run() -> None:
    assert write_readme.README.read_text(encoding="utf-8") == write_readme.render(), (
        "tests/scenarios/README.md drifted: run `python tests/scenarios/write_readme.py`"
    )


def test_its_total_counts_its_own_rows() -> None:
    _, outcomes = write_readme.last_run()
    text = write_readme.render()
    main_table = text.split("\n## Without ptrace")[0]  # each no-ptrace run has its own table
    rows = re.findall(r"^\| [a-z0-9_]+ \| ", main_table, re.MULTILINE)
    correct = sum(o.correct for o in outcomes)
    assert len(rows) - 1 == len(outcomes)  # the header row
    assert f"\n{correct}/{len(outcomes)} correct (" in text
