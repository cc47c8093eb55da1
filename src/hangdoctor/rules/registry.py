"""The rules hangdoctor runs, found by looking: every `Rule` subclass defined in a module of a
family folder (`rules/<family>/<rule>.py`, the family being the category's prefix). Adding a rule
is adding one file; modules whose name starts with `_` hold what several rules share."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import types
from functools import cache
from pathlib import Path

from hangdoctor.rules.base import Rule

_HERE = Path(__file__).parent


def _rule_modules() -> list[str]:
    names = []
    for family in sorted(p.name for p in _HERE.iterdir() if (p / "__init__.py").is_file()):
        for module in pkgutil.iter_modules([str(_HERE / family)]):
            if not module.name.startswith("_"):
                names.append(f"hangdoctor.rules.{family}.{module.name}")
    return names


@cache
def discover() -> tuple[type[Rule], ...]:
    """Every rule, ordered by id."""
    found: list[type[Rule]] = []
    for name in _rule_modules():
        module = importlib.import_module(name)
        # On Python 3.10 a module-level alias such as `tuple[str, int]` passes
        # inspect.isclass, and issubclass then raises.
        for _, value in inspect.getmembers(module, inspect.isclass):
            if (not isinstance(value, types.GenericAlias) and issubclass(value, Rule)
                    and value.__module__ == name
                    and not inspect.isabstract(value)):
                found.append(value)
    return tuple(sorted(found, key=lambda rule: rule.id))


ALL_RULES: tuple[type[Rule], ...] = discover()
