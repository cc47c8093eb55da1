"""`--lang`: the language of the report a command prints and writes (English or Chinese),
by default the locale's (`LANG=zh_CN.UTF-8` gives Chinese)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import click

from hangdoctor.i18n import LANGUAGES, Language, set_language

F = TypeVar("F", bound=Callable[..., object])


def _choose(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    if value in LANGUAGES:
        set_language(value)


def language_option(command: F) -> F:
    """The `--lang en|zh` option, taken before the others so that their messages use it."""
    option = click.option(
        "--lang",
        type=click.Choice(LANGUAGES),
        default=None,
        is_eager=True,
        expose_value=False,
        callback=_choose,
        help="Language of the report: en or zh (default: from HANGDOCTOR_LANG or LANG).",
    )
    return option(command)


__all__ = ["Language", "language_option"]
