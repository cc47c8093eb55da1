"""docs/contributing.md is true: the rule it shows as the example of adding one is valid code
that fires on its `fires_on` evidence, stays quiet on its `quiet_on`, and gets a page."""

from __future__ import annotations

import re
import shutil
import subprocess

from hangdoctor.analysis.job import JobView
from hangdoctor.docs import diagnosis_page, render_page
from hangdoctor.rules.base import Rule
from tests.conftest import REPO


def _example_rule() -> type[Rule]:
    guide = (REPO / "docs" / "contributing.md").read_text(encoding="utf-8")
    [code] = re.findall(r"```python\n(.*?)```", guide, flags=re.S)[:1]
    namespace: dict[str, object] = {"__name__": "contributed_rule"}
    exec(compile(code, "docs/contributing.md", "exec"), namespace)
    found = [
        value
        for value in namespace.values()
        if isinstance(value, type) and issubclass(value, Rule) and value is not Rule
    ]
    assert len(found) == 1
    return found[0]


def test_the_guides_example_rule_fires_where_it_says_and_gets_a_page() -> None:
    rule = _example_rule()
    assert rule.id == "HD180"
    for example in rule.fires_on:
        findings = list(rule().check(JobView(example.build())))
        assert findings and findings[0].category == rule.category, example.name
    for example in rule.quiet_on:
        assert not list(rule().check(JobView(example.build()))), example.name
    page = render_page(diagnosis_page(rule))
    assert page.startswith("# HD180: ") and rule.why in page.replace("\n", " ")


def test_the_guides_word_on_translations_holds() -> None:
    """The guide says: only the .po is committed, the build compiles it, a missing translation
    warns and a wrong field fails, through tools/i18n.py commands that exist."""
    from tools import i18n as catalogs

    guide = (REPO / "docs" / "contributing.md").read_text(encoding="utf-8")
    said = " ".join(guide.split())
    commands = set(re.findall(r"python tools/i18n\.py (\w+)", said))
    assert commands and commands <= set(catalogs.ACTIONS), commands
    assert "Only the `.po` is committed" in said and "warn of it" in said
    assert "*.mo" in (REPO / ".gitignore").read_text(encoding="utf-8").splitlines()
    if shutil.which("git") and (REPO / ".git").exists():
        tracked = subprocess.run(
            ["git", "-C", str(REPO), "ls-files", "*.mo"],
            capture_output=True,
            text=True,
            check=True,
        )
        assert tracked.stdout == ""
    assert "{fields}" in said and "without failing" in said
