"""The rules hangdoctor runs, found by looking: every `Rule` subclass defined in a module of a
family folder (`rules/<family>/<rule>.py`, the family being the category's prefix). Adding a rule
is adding one file; modules whose name starts with `_` hold what several rules share."""

from __future__ import annotations

from functools import cache

from hangdoctor.discovery import find_classes
from hangdoctor.rules.base import Rule


@cache
def discover() -> tuple[type[Rule], ...]:
    """Every rule, ordered by id."""
    found = find_classes("hangdoctor.rules", Rule, families=True)
    return tuple(sorted(found, key=lambda rule: rule.id))


ALL_RULES: tuple[type[Rule], ...] = discover()
