"""The report's language: every sentence a user reads goes through `_` (or `_n`), so that a
gettext catalog can give it in Chinese (`--lang zh`, or a `zh_*` locale).

Messages are Python format strings with named fields, translated first and filled after:

    _("rank {rank} waits in {op}", rank=3, op="all_reduce")

so a translation may put the fields in another order. The catalogs live in
`hangdoctor/locale/<lang>/LC_MESSAGES/hangdoctor.po`: the wheel's build compiles each to a
`.mo` (setup.py), and a source checkout compiles it in memory at first use; `python
tools/i18n.py` extracts and updates them with Babel, and checks them (a message without a
translation is a warning, and shows in English; a translation whose fields differ is an
error). What is the contract stays English in every language: taxonomy
and rule ids, report.json's field names, the job's own text (code, paths, thread names).

A message whose translation is missing or cannot be filled falls back to English: a report is
never lost to a catalog's mistake."""

from __future__ import annotations

import gettext
import io
import os
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Literal

from hangdoctor.po_catalog import compile_mo, read_po

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
        return _translations(language)
    except (OSError, ValueError):  # no catalog, or a broken one: English rather than no report
        return gettext.NullTranslations()


def _translations(language: Language) -> gettext.GNUTranslations:
    """The compiled `.mo` (an installed wheel has it), else the `.po` compiled here in memory
    (a source checkout, an editable install: the `.mo` is built, never committed). A `.mo`
    older than its `.po` is one compiled before the last edit: the `.po` wins."""
    po = LOCALE_DIR / language / "LC_MESSAGES" / f"{DOMAIN}.po"
    mo = po.with_suffix(".mo")
    if mo.exists() and (not po.exists() or mo.stat().st_mtime >= po.stat().st_mtime):
        with mo.open("rb") as handle:
            return gettext.GNUTranslations(handle)
    return gettext.GNUTranslations(io.BytesIO(compile_mo(read_po(po))))


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
