"""Every message a user reads exists in Chinese too, and the language is chosen as users
expect: `--lang`, else HANGDOCTOR_LANG, else the locale."""

from __future__ import annotations

import pytest

from hangdoctor import i18n
from tools import i18n as catalogs


def test_every_message_has_a_chinese_translation_with_the_same_fields() -> None:
    wrong = catalogs.problems()
    assert not wrong, "\n".join(wrong[:40]) + (
        f"\n... {len(wrong)} in all" if len(wrong) > 40 else ""
    )


@pytest.mark.parametrize(
    ("environ", "expected"),
    [
        ({"LANG": "zh_CN.UTF-8"}, "zh"),
        ({"LANG": "zh_TW"}, "zh"),
        ({"LANG": "en_US.UTF-8"}, "en"),
        ({"LC_ALL": "C", "LANG": "zh_CN.UTF-8"}, "en"),
        ({"LC_MESSAGES": "zh_CN.UTF-8", "LANG": "en_US"}, "zh"),
        ({"HANGDOCTOR_LANG": "en", "LANG": "zh_CN.UTF-8"}, "en"),
        ({"HANGDOCTOR_LANG": "zh"}, "zh"),
        ({}, "en"),
    ],
)
def test_language_follows_the_environment(environ: dict[str, str], expected: str) -> None:
    assert i18n.language_from_environment(environ) == expected


def test_a_translation_that_cannot_be_filled_falls_back_to_english(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    class Broken:
        def gettext(self, message: str) -> str:
            return "{missing} 等待"

        def ngettext(self, singular: str, plural: str, count: int) -> str:
            return "{nope}"

    monkeypatch.setattr(i18n, "_catalog", lambda language: Broken())
    assert i18n._("rank {rank} waits", rank=3) == "rank 3 waits"
    assert i18n._n("{count} rank", "{count} ranks", 2) == "2 ranks"


def test_fields_of_a_message() -> None:
    assert catalogs.fields("rank {rank} at {share:.0%}, {{literal}}") == {"rank", "share"}


def _cjk(text: str) -> bool:
    return any("\u4e00" <= ch <= "\u9fff" for ch in text)


def test_a_real_report_in_chinese_keeps_its_contract_in_english() -> None:
    """`analyze --lang zh --json` of a real NCCL timeout log: every sentence a user reads is
    Chinese; the category, the rule id, the field names and the log's own line are not."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    log = Path(__file__).parents[1] / "fixtures" / "logs" / "torchrun_nccl_timeout.log"
    english = subprocess.run(
        [sys.executable, "-m", "hangdoctor", "analyze", "--lang", "en", "--json", str(log)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    chinese = subprocess.run(
        [sys.executable, "-m", "hangdoctor", "analyze", "--lang", "zh", "--json", str(log)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    en, zh = json.loads(english.stdout), json.loads(chinese.stdout)
    assert (en["language"], zh["language"]) == ("en", "zh")
    assert en.keys() == zh.keys()
    assert [f["id"] for f in en["findings"]] == [f["id"] for f in zh["findings"]]
    assert [f["category"] for f in en["findings"]] == [f["category"] for f in zh["findings"]]
    first = zh["findings"][0]
    assert _cjk(first["title"]) and not _cjk(en["findings"][0]["title"])
    assert all(_cjk(fix) for fix in first["fixes"])
    assert all(_cjk(line) for line in first["evidence"])
    assert first["culprit"]["rank"] == en["findings"][0]["culprit"]["rank"]
    # The job's own words stay as it wrote them.
    assert any("Watchdog caught collective operation timeout" in line for line in first["evidence"])


def test_a_chinese_lock_order_report_has_no_english_fragment() -> None:
    """The words of a list joined into a sentence (`_()` inside another's arguments) used to be
    missed by the catalog and stayed English in a Chinese report (issue 29, item 9)."""
    from hangdoctor.analysis.job import JobView
    from hangdoctor.rules.process.lock_deadlock import LockDeadlock

    example = next(e for e in LockDeadlock.fires_on if e.name == "lock-order deadlock on globals")
    before = i18n.active_language()
    i18n.set_language("zh")
    try:
        [finding] = list(LockDeadlock().check(JobView(example.build())))
    finally:
        i18n.set_language(before)
    said = " ".join([finding.title, *finding.evidence, *finding.fixes])
    assert "taken at line" not in said and "while holding" not in said
    assert _cjk(finding.fixes[0])
