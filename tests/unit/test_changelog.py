"""CHANGELOG.md keeps the form of Keep a Changelog: an Unreleased section first, then releases
newest first, each with only the standard kinds of change, and the package's version among
them."""

from __future__ import annotations

import re

from tests.conftest import REPO

KINDS = {"Added", "Changed", "Deprecated", "Removed", "Fixed", "Security"}


def test_the_changelog_keeps_its_form() -> None:
    text = (REPO / "CHANGELOG.md").read_text(encoding="utf-8")
    releases = re.findall(r"^## \[([^\]]+)\](?: - (\d{4}-\d{2}-\d{2}))?$", text, flags=re.M)
    assert releases and releases[0][0] == "Unreleased"
    dated = [date for name, date in releases[1:]]
    assert all(dated) and dated == sorted(dated, reverse=True)
    kinds = set(re.findall(r"^### (.+)$", text, flags=re.M))
    assert kinds <= KINDS, kinds - KINDS
    # (read by hand: tomllib is 3.11+, and these tests run on 3.10 too)
    version = re.findall(r'^version = "([^"]+)"', (REPO / "pyproject.toml").read_text(), re.M)[0]
    assert version in {name for name, _date in releases}
