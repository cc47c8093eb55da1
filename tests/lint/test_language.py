"""`hangdoctor lint` in another language: the sentences (messages, fixes, the rules' help,
the summary) follow it, what scripts and code-scanning tools key on (ids, names, categories,
JSON/SARIF keys) stays English, and the generated documentation stays English whatever the
language in force.

A stand-in catalog that wraps every message in «...» shows which text was translated without
depending on the Chinese catalog's wording (tests/unit/test_translations.py checks that every
message has a translation)."""

from __future__ import annotations

import gettext
import json
from collections.abc import Iterator

import pytest

from hangdoctor import docs as rule_pages
from hangdoctor import i18n
from hangdoctor.lint import docs as lint_docs
from hangdoctor.lint.render import render, render_text, summary, to_json, to_sarif
from hangdoctor.lint.rules import ALL_RULES
from hangdoctor.lint.runner import Linter

BAD = "import torch.distributed as dist\nif dist.get_rank() == 0:\n    dist.barrier()\n"
DEBUGGER = "import pdb\npdb.set_trace()\n"


class Marked(gettext.NullTranslations):
    """Every message "translated" to itself between « and »."""

    def gettext(self, message: str) -> str:
        return f"«{message}»"

    def ngettext(self, msgid1: str, msgid2: str, n: int) -> str:
        return f"«{msgid1 if n == 1 else msgid2}»"


@pytest.fixture
def marked(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The language in force is "zh", with the stand-in catalog."""
    monkeypatch.setattr(
        i18n,
        "_catalog",
        lambda language: Marked() if language == "zh" else gettext.NullTranslations(),
    )
    monkeypatch.setattr(i18n, "_active", "zh")
    yield


def _translated(text: str) -> bool:
    return text.startswith("«") and text.endswith("»")


def test_findings_are_in_the_language_in_force_with_english_ids(marked: None) -> None:
    linter = Linter()
    (collective,) = linter.lint_source(BAD, "train.py")
    (debugger,) = linter.lint_source(DEBUGGER, "train.py")
    (broken,) = linter.lint_source("def f(:\n", "broken.py")
    # A message the rule makes for this place, a rule's own message, a parse error.
    for finding in (collective, debugger, broken):
        assert _translated(finding.message) and _translated(finding.fix), finding
    assert "`barrier`" in collective.message  # the code's names go in as they are
    assert (collective.rule_id, collective.name, collective.category) == (
        "HL101",
        "collective-under-rank-condition",
        "distributed.collective_mismatch",
    )
    assert (debugger.rule_id, broken.rule_id) == ("HL402", "HL000")


def test_text_output_and_summary_are_translated(marked: None) -> None:
    findings = Linter().lint_source(BAD, "train.py")
    line = render_text(findings)
    assert line.startswith("«train.py:3:5 HL101 «") and line.endswith("»\n")
    assert _translated(summary(findings, 1)) and "HL101 x1" in summary(findings, 1)
    assert _translated(summary([], 1))


def test_json_and_sarif_keep_english_keys_and_say_their_language(marked: None) -> None:
    findings = Linter().lint_source(BAD, "train.py")
    data = json.loads(render(findings, 1, "json"))
    assert data["language"] == "zh"
    (finding,) = data["findings"]
    assert set(finding) == {
        "path",
        "line",
        "column",
        "id",
        "name",
        "category",
        "severity",
        "message",
        "fix",
    }
    assert finding["id"] == "HL101" and finding["severity"] == "error"
    assert _translated(finding["message"]) and _translated(finding["fix"])

    log = to_sarif(findings)
    (run,) = log["runs"]
    assert run["language"] == "zh"
    rules = run["tool"]["driver"]["rules"]
    for rule in rules:
        assert rule["id"].startswith("HL") and not _translated(rule["name"])
        assert _translated(rule["shortDescription"]["text"])
        assert _translated(rule["fullDescription"]["text"])
        assert _translated(rule["help"]["text"])
    (result,) = run["results"]
    assert result["ruleId"] == "HL101" and result["level"] == "error"
    assert _translated(result["message"]["text"])


def test_english_is_the_default_and_is_recorded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(i18n, "_active", "en")
    findings = Linter().lint_source(BAD, "train.py")
    assert to_json(findings, 1)["language"] == "en"
    assert to_sarif(findings)["runs"][0]["language"] == "en"
    assert "«" not in render_text(findings)


def test_generated_documentation_stays_english(marked: None) -> None:
    in_zh = lint_docs.rules_markdown()
    pages_in_zh = [rule_pages.lint_page(rule) for rule in ALL_RULES]
    i18n._active = "en"  # the fixture's monkeypatch restores it
    assert lint_docs.rules_markdown() == in_zh and "«" not in in_zh
    assert [rule_pages.lint_page(rule) for rule in ALL_RULES] == pages_in_zh
