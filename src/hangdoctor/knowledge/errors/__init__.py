"""Known errors: the signatures of exceptions people hit when training (a message pattern,
its category, what it means, the fix, a public source), kept as data in this folder's TOML
files, so that a failed job's report says what its exception means rather than "fix the error
at the line named"."""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources

from hangdoctor.i18n import active_language
from hangdoctor.taxonomy import Category

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib


@dataclass(frozen=True)
class KnownError:
    """One signature: the messages it matches and what to tell the job's owner."""

    id: str
    pattern: re.Pattern[str]
    category: Category
    meaning: str
    fix: str
    link: str
    source_file: str
    types: tuple[str, ...] = ()
    examples: tuple[str, ...] = ()
    meaning_zh: str = ""
    fix_zh: str = ""

    def matches(self, short_type: str, message: str) -> re.Match[str] | None:
        """The match of this signature in `ShortType: message`, if it applies."""
        if self.types and short_type not in self.types:
            return None
        return self.pattern.search(f"{short_type}: {message}")


@dataclass(frozen=True)
class Explained:
    """A message matched by a known error: its text filled with what the message said."""

    error: KnownError
    meaning: str
    fix: str


def _entry(raw: dict[str, object], source_file: str) -> KnownError:
    def text(key: str, default: str | None = None) -> str:
        value = raw.get(key, default)
        if not isinstance(value, str):
            raise ValueError(f"{source_file}: {raw.get('id')!r}: {key} must be a string")
        return value

    def strings(key: str) -> tuple[str, ...]:
        value = raw.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ValueError(f"{source_file}: {raw.get('id')!r}: {key} must be a list of strings")
        return tuple(value)

    return KnownError(
        id=text("id"),
        pattern=re.compile(text("pattern")),
        category=Category(text("category")),
        meaning=text("meaning"),
        fix=text("fix"),
        link=text("link"),
        source_file=source_file,
        types=strings("types"),
        examples=strings("examples"),
        meaning_zh=text("meaning_zh", ""),
        fix_zh=text("fix_zh", ""),
    )


_GENERIC = "generic.toml"


@cache
def known_errors() -> tuple[KnownError, ...]:
    """Every signature, in matching order (files by name, generic.toml last; entries in file
    order)."""
    folder = resources.files(__name__)
    entries: list[KnownError] = []
    # generic.toml (Python's own exception types) last: a library's signature is narrower.
    for item in sorted(folder.iterdir(), key=lambda p: (p.name == _GENERIC, p.name)):
        if not item.name.endswith(".toml"):
            continue
        document = tomllib.loads(item.read_text(encoding="utf-8"))
        entries += [_entry(raw, item.name) for raw in document.get("error", [])]
    return tuple(entries)


def _filled(template: str, match: re.Match[str]) -> str:
    groups = {k: v for k, v in match.groupdict().items() if v is not None}
    try:
        return template.format_map(groups)
    except (KeyError, IndexError, ValueError):
        return template


def explain(short_type: str, message: str, details: Sequence[str] = ()) -> Explained | None:
    """What the first signature matching the exception says about it, in the active language
    (Chinese where the entry has it), else None. The whole message is tried first, with the
    lines that continued it (`details`), where a multi-line message keeps its cause (NCCL's
    `Last error:`, load_state_dict's `Missing key(s)`) and narrow signatures find it; then its
    first line alone."""
    found = _first_match(short_type, "\n".join((message, *details))) if details else None
    if found is None:
        found = _first_match(short_type, message)
    if found is None:
        return None
    error, match = found
    chinese = active_language() == "zh"
    meaning = error.meaning_zh if chinese and error.meaning_zh else error.meaning
    fix = error.fix_zh if chinese and error.fix_zh else error.fix
    return Explained(error=error, meaning=_filled(meaning, match), fix=_filled(fix, match))


def _first_match(short_type: str, message: str) -> tuple[KnownError, re.Match[str]] | None:
    for error in known_errors():
        match = error.matches(short_type, message)
        if match is not None:
            return error, match
    return None
