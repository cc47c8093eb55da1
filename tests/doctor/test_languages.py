"""The doctor speaks the report's language: every sentence of its results goes through the
catalog, while ids, areas and statuses (what scripts match on) stay as they are."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from hangdoctor import i18n
from hangdoctor.doctor import compat
from hangdoctor.doctor.check import Check, Example
from hangdoctor.doctor.checks import all_checks, run_checks
from hangdoctor.doctor.checks.versions import KNOWN_BAD_PROSE
from hangdoctor.doctor.render import render_terminal
from tests.doctor.factories import node

#: Titles that are a setting's or a library's own name, the same in every language.
NAMES = {"vm.max_map_count", "net.core.somaxconn", "glibc", "libstdc++"}


class _Marked:
    """A catalog that gives every message back marked `ZH:`: what went through it shows."""

    def gettext(self, message: str) -> str:
        return f"ZH:{message}"

    def ngettext(self, singular: str, plural: str, count: int) -> str:
        return f"ZH:{singular if count == 1 else plural}"


@pytest.fixture
def marked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(i18n, "_catalog", lambda language: _Marked())


def _examples() -> list[object]:
    return [
        pytest.param(check, example, id=f"{check.id}-{example.name}")
        for check in all_checks()
        for example in (*check.fires_on, *check.quiet_on)
    ]


@pytest.mark.usefixtures("marked")
@pytest.mark.parametrize(("check", "example"), _examples())
def test_every_title_and_reason_is_translated(check: Check, example: Example) -> None:
    for result in check.check(example.facts()):
        assert result.title in NAMES or result.title.startswith("ZH:"), result
        assert not result.why or "ZH:" in result.why, result
        assert (result.id, result.area) == (check.id, check.area)


def test_compat_json_prose_is_in_the_translation_table() -> None:
    # compat.json stays English; what it says to users is translated through this table.
    for entry in compat.load()["known_bad"]:
        prose = KNOWN_BAD_PROSE.get(entry["id"])
        assert prose == {field: entry[field] for field in ("title", "why", "fix")}, entry["id"]


@pytest.mark.usefixtures("marked")
def test_the_table_and_summary_are_translated_but_ids_are_not() -> None:
    results = run_checks(node(limits={"somaxconn": 128}))
    out = io.StringIO()
    render_terminal(node(), results, 1.0, Console(file=out, width=200, color_system=None))
    text = out.getvalue()
    assert "ZH:found" in text and "ZH:wanted" in text
    assert "ZH:warn DR202 net.core.somaxconn" in text
    assert "ZH:why: " in text and "ZH:fix: " in text
    assert "ZH:ZH:warn: 0 problem(s), 1 warning(s)" in text
