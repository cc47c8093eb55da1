"""A rule's prose is read from its docstring's labelled paragraphs, exactly as written, and a
docstring that is not in that form is left alone or refused."""

from __future__ import annotations

import pytest

from hangdoctor.described import describe, sections


def test_labelled_paragraphs_become_one_line_each() -> None:
    doc = """a worker waits for a lock
    that its parent held

    Fires when: a forked child waits in `acquire`

    Why: fork copies the lock, held,
    and no thread is left to release it.

    Instead: Use spawn.
    """
    assert sections(doc) == {
        "summary": "a worker waits for a lock that its parent held",
        "fires_when": "a forked child waits in `acquire`",
        "why": "fork copies the lock, held, and no thread is left to release it.",
        "instead": "Use spawn.",
    }


def test_an_ordinary_docstring_is_not_prose_to_read() -> None:
    assert sections("Why a helper exists.\n\nA second paragraph.") == {}


def test_an_unlabelled_paragraph_among_labelled_ones_is_refused() -> None:
    with pytest.raises(TypeError, match="without a label"):
        sections("summary\n\nWhy: because.\n\nand then this")


def test_a_stated_attribute_wins_over_the_docstring() -> None:
    class Stated:
        """a summary

        Why: from the docstring.
        """

        why = "stated"

    describe(Stated)
    assert Stated.why == "stated"
    assert Stated.summary == "a summary"  # type: ignore[attr-defined]
