"""hangdoctor's own .po compiler (what the wheel's build and a source checkout use, without
Babel) gives what gettext expects, and hangdoctor.i18n reads a catalog from a `.mo` or, when
there is none or an older one, from the `.po`: a missing translation shows in English."""

from __future__ import annotations

import gettext
import io
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from hangdoctor import i18n
from hangdoctor.po_catalog import PoSyntaxError, compile_file, compile_mo, parse_po

PO = r"""# a comment
#, fuzzy
msgid ""
msgstr ""
"Language: zh\n"
"Plural-Forms: nplurals=1; plural=0;\n"
"Content-Type: text/plain; charset=utf-8\n"

#: cli/run.py:1
#, python-brace-format
msgid "rank {rank} waits"
msgstr "rank {rank} 在等待"

msgid ""
"a message on "
"two lines, with \"quotes\"\n"
msgstr "两行的消息 带\"引号\"\n"

msgid "{count} rank"
msgid_plural "{count} ranks"
msgstr[0] "{count} 个 rank"

msgid "not translated yet"
msgstr ""

#, fuzzy
msgid "a guess"
msgstr "猜的"

msgctxt "menu"
msgid "Open"
msgstr "打开"

#~ msgid "gone"
#~ msgstr "没了"
"""


def _translations(text: str) -> gettext.GNUTranslations:
    return gettext.GNUTranslations(io.BytesIO(compile_mo(parse_po(text))))


def test_what_is_compiled_is_what_gettext_reads() -> None:
    zh = _translations(PO)
    assert zh.gettext("rank {rank} waits") == "rank {rank} 在等待"
    assert zh.gettext('a message on two lines, with "quotes"\n') == '两行的消息 带"引号"\n'
    assert zh.ngettext("{count} rank", "{count} ranks", 5) == "{count} 个 rank"
    assert zh.pgettext("menu", "Open") == "打开"
    assert zh.info()["plural-forms"] == "nplurals=1; plural=0;"


def test_untranslated_fuzzy_and_obsolete_entries_are_left_out() -> None:
    zh = _translations(PO)
    assert zh.gettext("not translated yet") == "not translated yet"
    assert zh.gettext("a guess") == "a guess"
    assert zh.gettext("gone") == "gone"
    assert zh.ngettext("{count} file", "{count} files", 2) == "{count} files"


def test_a_line_that_is_not_gettext_syntax_is_an_error_with_its_place() -> None:
    with pytest.raises(PoSyntaxError, match=r"x\.po:2"):
        parse_po('msgid "a"\nmsgstr: "b"\n', "x.po")


@pytest.fixture
def locale_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """hangdoctor.i18n reading its catalogs from tmp_path, in Chinese."""
    folder = tmp_path / "zh" / "LC_MESSAGES"
    folder.mkdir(parents=True)
    monkeypatch.setattr(i18n, "LOCALE_DIR", tmp_path)
    monkeypatch.setattr(i18n, "_active", "zh")
    i18n._catalog.cache_clear()
    yield folder
    i18n._catalog.cache_clear()


def test_without_a_mo_the_po_is_read_and_a_missing_translation_shows_in_english(
    locale_dir: Path,
) -> None:
    (locale_dir / "hangdoctor.po").write_text(PO, encoding="utf-8")
    assert i18n._("rank {rank} waits", rank=3) == "rank 3 在等待"
    assert i18n._("not translated yet") == "not translated yet"
    assert i18n._n("{count} rank", "{count} ranks", 2) == "2 个 rank"
    assert not (locale_dir / "hangdoctor.mo").exists()  # compiled in memory, nothing written


def test_a_mo_is_read_unless_the_po_was_edited_after_it(locale_dir: Path) -> None:
    po, mo = locale_dir / "hangdoctor.po", locale_dir / "hangdoctor.mo"
    po.write_text(PO, encoding="utf-8")
    compile_file(po, mo)
    po.write_text(PO.replace("在等待", "在等"), encoding="utf-8")  # the .mo is older
    os.utime(mo, (1_000_000, 1_000_000))
    assert i18n._("rank {rank} waits", rank=3) == "rank 3 在等"
    i18n._catalog.cache_clear()
    po.unlink()  # an installed wheel: the .mo alone
    assert i18n._("rank {rank} waits", rank=3) == "rank 3 在等待"


def test_no_catalog_at_all_is_english(locale_dir: Path) -> None:
    assert i18n._("rank {rank} waits", rank=3) == "rank 3 waits"
