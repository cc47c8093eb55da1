"""A rule's or a doctor check's prose is its class docstring, in labelled paragraphs (as ruff's rule
docs keep theirs beside the code): the first paragraph is its summary, then `Fires when:`, `Why:`
and `Instead:`. The class attributes of those names are read from it when the class is made, so
that the rule pages, tables and `explain` read attributes as before, and a class header is only
what the engine needs (its id, category, specificity)."""

from __future__ import annotations

import inspect

#: A paragraph's label and the attribute it fills.
LABELS = {"Fires when:": "fires_when", "Why:": "why", "Instead:": "instead"}


def sections(doc: str) -> dict[str, str]:
    """The docstring's paragraphs by attribute, each joined into one line; {} for a docstring
    without a labelled paragraph (an ordinary docstring)."""
    paragraphs = [" ".join(p.split()) for p in inspect.cleandoc(doc).split("\n\n") if p.strip()]
    found: dict[str, str] = {}
    stray: list[str] = []
    for index, text in enumerate(paragraphs):
        label = next((lb for lb in LABELS if text.startswith(lb + " ")), None)
        if label is not None:
            found[LABELS[label]] = text[len(label) + 1 :]
        elif index == 0:
            found["summary"] = text
        else:
            stray.append(text)
    if len(found) < 2:
        return {}
    if stray:
        raise TypeError(f"a paragraph without a label among labelled ones: {stray[0][:60]!r}")
    return found


def describe(cls: type) -> None:
    """Fill the class's prose attributes from its own docstring, where it has labelled paragraphs
    and the class does not state the attribute itself."""
    doc = vars(cls).get("__doc__")
    if not doc:
        return
    for name, text in sections(doc).items():
        if name not in vars(cls):
            setattr(cls, name, text)
