"""The Chinese catalog has no errors (a translation with other fields than its message's), a
message without a translation is a warning that shows in English, and the language is chosen
as users expect: `--lang`, else HANGDOCTOR_LANG, else the locale."""

from __future__ import annotations

import shutil
import warnings
from pathlib import Path

import pytest

from hangdoctor import i18n
from tools import i18n as catalogs


def test_the_chinese_catalog_has_no_errors_and_warns_of_missing_translations() -> None:
    wrong = catalogs.problems()
    assert not wrong, "\n".join(wrong[:40]) + (
        f"\n... {len(wrong)} in all" if len(wrong) > 40 else ""
    )
    missing = catalogs.untranslated_messages()
    if missing:  # shown in English meanwhile: a warning in pytest's summary, not a failure
        warnings.warn(
            f"{len(missing)} messages have no Chinese translation: "
            + "; ".join(missing[:10])
            + " (python tools/i18n.py check lists them all)",
            stacklevel=1,
        )


@pytest.fixture
def locale_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The Chinese .po copied aside, and tools/i18n.py pointed at the copy."""
    po = catalogs.po_path("zh")
    copy = tmp_path / "locale" / po.relative_to(catalogs.LOCALE)
    copy.parent.mkdir(parents=True)
    shutil.copy(po, copy)
    monkeypatch.setattr(catalogs, "LOCALE", tmp_path / "locale")
    monkeypatch.setattr(catalogs, "ROOT", tmp_path)
    return copy


def _edit_entry(po: Path, msgid: str, msgstr: str) -> None:
    text = po.read_text(encoding="utf-8")
    head = f"msgid {msgid}\nmsgstr "
    start = text.index(head) + len(head)
    end = text.index("\n\n", start)
    po.write_text(text[:start] + msgstr + text[end:], encoding="utf-8")


def test_a_missing_translation_is_a_warning_and_a_wrong_field_an_error(
    locale_copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _edit_entry(locale_copy, '" (in {function})"', '""')
    assert catalogs.problems() == []
    assert catalogs.main(["check"]) == 0
    said = capsys.readouterr().out
    assert "warning: 1 messages have no translation" in said
    assert "no translation of ' (in {function})'" in said

    _edit_entry(locale_copy, '" (in {function})"', '"在 {func} 中"')
    [wrong] = catalogs.problems()
    assert "fields of ' (in {function})'" in wrong
    assert catalogs.main(["check"]) == 1
    assert "error: 1 problems" in capsys.readouterr().out


def test_a_po_the_package_cannot_read_is_an_error(locale_copy: Path) -> None:
    locale_copy.write_text(
        locale_copy.read_text(encoding="utf-8") + "\nmsgid oops\n", encoding="utf-8"
    )
    assert any("cannot compile" in line for line in catalogs.problems())


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
