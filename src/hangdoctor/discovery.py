"""How diagnosis rules (HD), lint rules (HL) and doctor checks (DR) are found: by looking, so
that adding one is adding one file. A package holds either the classes' modules directly (the
doctor's checks) or one folder per family holding them (`rules/<family>/<rule>.py`); a module or
folder whose name starts with `_` holds what several of them share and is not looked in."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import types
from pathlib import Path
from typing import Any


def _module_names(package: str, *, families: bool) -> list[str]:
    root = Path(importlib.import_module(package).__path__[0])
    folders = [(package, root)]
    if families:
        folders = [
            (f"{package}.{p.name}", p)
            for p in sorted(root.iterdir())
            if (p / "__init__.py").is_file() and not p.name.startswith("_")
        ]
    return [
        f"{prefix}.{module.name}"
        for prefix, folder in folders
        for module in sorted(pkgutil.iter_modules([str(folder)]), key=lambda m: m.name)
        if not module.name.startswith("_") and not module.ispkg
    ]


def find_classes(package: str, base: type[object], *, families: bool) -> list[type[Any]]:
    """Every concrete subclass of `base` with its own `id`, defined in a module of `package`
    (in its family folders when `families`), in module order. (`base` is typed loosely because
    bases are abstract classes, which mypy will not bind to `type[T]`.)"""
    found: list[type[Any]] = []
    for name in _module_names(package, families=families):
        module = importlib.import_module(name)
        for _, value in inspect.getmembers(module, inspect.isclass):
            # On Python 3.10 a module-level alias such as `tuple[str, int]` passes
            # inspect.isclass, and issubclass then raises.
            if (
                not isinstance(value, types.GenericAlias)
                and issubclass(value, base)
                and value.__module__ == name
                and not inspect.isabstract(value)
                and "id" in vars(value)
            ):
                found.append(value)
    return found
