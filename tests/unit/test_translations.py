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
