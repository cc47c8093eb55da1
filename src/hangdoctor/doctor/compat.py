"""The compatibility data file (compat.json): loaded once, read by the version checks."""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources
from typing import Any

from packaging.version import InvalidVersion, Version


@lru_cache(maxsize=1)
def load() -> dict[str, Any]:
    """compat.json, shipped inside the package."""
    text = resources.files("hangdoctor.doctor").joinpath("compat.json").read_text("utf-8")
    data = json.loads(text)
    if not isinstance(data, dict):
        raise ValueError("compat.json does not hold a JSON object")
    return data


def version(text: str | None) -> Version | None:
    """A comparable version, or None when `text` is missing or not a version."""
    if not text:
        return None
    try:
        return Version(text.split("+", 1)[0].strip())
    except InvalidVersion:
        return None


def major_minor(text: str | None) -> str | None:
    """`12.4` from `12.4.127` (None when unreadable)."""
    parsed = version(text)
    if parsed is None:
        return None
    return f"{parsed.major}.{parsed.minor}"
