"""The report's language: every sentence a user reads goes through `_` (or `_n`), so that a
gettext catalog can give it in Chinese (`--lang zh`, or a `zh_*` locale).

Messages are Python format strings with named fields, translated first and filled after:

    _("rank {rank} waits in {op}", rank=3, op="all_reduce")

so a translation may put the fields in another order. The catalogs live in
`hangdoctor/locale/<lang>/LC_MESSAGES/hangdoctor.po` (compiled beside it to `.mo`); `python
tools/i18n.py` extracts, updates and compiles them with Babel, and a unit test fails when a
message has no translation. What is the contract stays English in every language: taxonomy
and rule ids, report.json's field names, the job's own text (code, paths, thread names).

A message whose translation is missing or cannot be filled falls back to English: a report is
never lost to a catalog's mistake."""

from __future__ import annotations

import gettext
import os
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Literal

Language = Literal["en", "zh"]
LANGUAGES: tuple[Language, ...] = ("en", "zh")
DOMAIN = "hangdoctor"
LOCALE_DIR = Path(__file__).with_name("locale")
#: Set by `--lang`, and inherited by what hangdoctor starts (a capture in its own process).
LANG_VARIABLE = "HANGDOCTOR_LANG"

_active: Language | None = None


def parse_language(value: str | None) -> Language | None:
    """`zh`, `zh_CN.UTF-8`, `zh-Hans`, `en_US`, `C`... as one of LANGUAGES, or None."""
    if not value:
        return None
    head = value.strip().lower().replace("-", "_").split(".")[0].split("_")[0]
    if head in LANGUAGES:
        return head
    return None


def language_from_environment(environ: Mapping[str, str] | None = None) -> Language:
    """HANGDOCTOR_LANG if set, else the locale's messages language (LC_ALL, LC_MESSAGES,
    LANG, in the order POSIX gives them), else English."""
    env = os.environ if environ is None else environ
    for name in (LANG_VARIABLE, "LC_ALL", "LC_MESSAGES", "LANG"):
        value = env.get(name)
        if value:
            # The first one set decides, as in POSIX: LC_ALL=C means C, whatever LANG says.
            return parse_language(value) or "en"
    return "en"


def set_language(language: Language | None) -> Language:
    """Use `language` from now on (None: from the environment); returns the one in force. It
    is exported in HANGDOCTOR_LANG so that a process hangdoctor starts speaks it too."""
    global _active
    chosen = language or language_from_environment()
    _active = chosen
    os.environ[LANG_VARIABLE] = chosen
    return chosen


def active_language() -> Language:
    """The language messages are given in now."""
    return _active or language_from_environment()


@cache
def _catalog(language: Language) -> gettext.NullTranslations:
    if language == "en":
        return gettext.NullTranslations()
    try:
        return gettext.translation(DOMAIN, LOCALE_DIR, languages=[language])
    except OSError:  # no compiled catalog: English rather than no report
        return gettext.NullTranslations()


def _fill(template: str, english: str, params: Mapping[str, object]) -> str:
    if not params:
        return template
    try:
        return template.format(**params)
    except (KeyError, IndexError, ValueError):
        return english.format(**params)


def _(message: str, /, **params: object) -> str:
    """`message` in the active language, its `{fields}` filled from `params`."""
    translated = _catalog(active_language()).gettext(message)
    return _fill(translated, message, params)


def _n(singular: str, plural: str, count: int, /, **params: object) -> str:
    """The singular or plural message for `count` (also given to the message as `{count}`)."""
    translated = _catalog(active_language()).ngettext(singular, plural, count)
    english = singular if count == 1 else plural
    return _fill(translated, english, {"count": count, **params})


def N_(message: str, /) -> str:
    """Mark a message for extraction where it is defined (a constant, a table) and translated
    later, by `_(CONSTANT, ...)` where it is used: at import time no language is chosen."""
    return message
