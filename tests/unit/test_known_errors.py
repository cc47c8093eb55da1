"""The knowledge base of known errors: every entry well formed, every example a real message
that its own entry matches first, and the base as large as the issue asks."""

from __future__ import annotations

import re

import pytest

from hangdoctor.i18n import active_language, set_language
from hangdoctor.knowledge.errors import explain, known_errors
from hangdoctor.taxonomy import Category

ENTRIES = known_errors()
_EXAMPLE = re.compile(r"^(?P<type>[A-Za-z_][\w.]*)(?::\s?(?P<message>.*))?$", re.DOTALL)


def _split(example: str) -> tuple[str, str]:
    match = _EXAMPLE.match(example)
    assert match is not None, f"not 'Type: message': {example!r}"
    return match["type"].rsplit(".", 1)[-1], match["message"] or ""


def test_the_base_covers_at_least_80_signatures_with_unique_ids():
    ids = [e.id for e in ENTRIES]
    assert len(ids) >= 80
    assert len(set(ids)) == len(ids), [i for i in ids if ids.count(i) > 1]


@pytest.mark.parametrize("entry", ENTRIES, ids=[e.id for e in ENTRIES])
def test_entry_is_complete(entry):
    assert re.fullmatch(r"[a-z0-9_]+(\.[a-z0-9_]+)+", entry.id)
    assert entry.link.startswith("https://")
    assert entry.meaning.strip() and entry.fix.strip()
    assert entry.meaning_zh.strip() and entry.fix_zh.strip()
    assert entry.examples, "every entry is tested on at least one real message"
    # A traceback's last line is what hangdoctor matches: the rest of a message is elsewhere.
    assert not any("\n" in e for e in entry.examples), "examples are one line each"
    assert isinstance(entry.category, Category)


@pytest.mark.parametrize("entry", ENTRIES, ids=[e.id for e in ENTRIES])
def test_each_example_is_explained_by_its_own_entry(entry):
    for example in entry.examples:
        short_type, message = _split(example)
        explained = explain(short_type, message)
        assert explained is not None, f"{entry.id}: no entry matches {example!r}"
        assert explained.error.id == entry.id, (
            f"{example!r} is taken by {explained.error.id} ({explained.error.source_file}) "
            f"before {entry.id}"
        )
        assert "{" not in explained.meaning and "{" not in explained.fix


def test_an_unknown_message_is_not_explained():
    assert explain("ValueError", "the frobnicator is out of sprockets") is None


def test_chinese_text_is_given_in_chinese():
    entry = ENTRIES[0]
    short_type, message = _split(entry.examples[0])
    before = active_language()
    set_language("zh")
    try:
        explained = explain(short_type, message)
    finally:
        set_language(before)
    assert explained is not None and explained.meaning != entry.meaning
