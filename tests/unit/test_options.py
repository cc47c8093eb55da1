"""`hangdoctor.options`: each setting of `run` and `watch()` defined and checked once, so that a
value that makes no sense is the same line at both doors."""

from __future__ import annotations

import pytest

from hangdoctor.cli import main
from hangdoctor.options import (
    HANG_TIMEOUT,
    KILL_GRACE,
    ON_HANG,
    InvalidSetting,
)
from hangdoctor.standalone.options import resolve


def test_seconds_are_read_from_numbers_and_text_and_blank_is_the_default() -> None:
    assert HANG_TIMEOUT.parse(5, "x") == 5.0
    assert HANG_TIMEOUT.parse(" 2.5 ", "x") == 2.5
    assert HANG_TIMEOUT.parse(None, "x") is None and HANG_TIMEOUT.parse("  ", "x") is None
    assert KILL_GRACE.parse(None, "x") == 10.0 and KILL_GRACE.parse("0", "x") == 0.0


@pytest.mark.parametrize("value", ["soon", "0.05", "-1", "nan", "inf", True])
def test_seconds_that_make_no_sense_are_refused_naming_how_they_came(value: object) -> None:
    with pytest.raises(InvalidSetting) as refused:
        HANG_TIMEOUT.parse(value, "HANGDOCTOR_HANG_TIMEOUT")
    assert str(refused.value) == (
        f"HANGDOCTOR_HANG_TIMEOUT='{value}' is not a number of seconds (at least 0.1)"
    )


def test_a_choice_is_one_word_in_any_case() -> None:
    assert ON_HANG.parse(" KILL ", "x") == "kill" and ON_HANG.parse(None, "x") == "report"
    with pytest.raises(InvalidSetting) as refused:
        ON_HANG.parse("explode", "--on-hang")
    assert str(refused.value) == "--on-hang='explode' is not one of report, kill"


@pytest.mark.parametrize(
    ("variable", "value"),
    [("HANGDOCTOR_HANG_TIMEOUT", "soon"), ("HANGDOCTOR_COMPILE_BUDGET", "0")],
)
def test_run_and_watch_say_the_same_line_for_a_variable_that_makes_no_sense(
    variable: str,
    value: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(variable, value)
    assert main(["run", "--", "true"]) == 2  # a usage error: nothing is run
    run_said = capsys.readouterr().err.strip().splitlines()[-1]
    resolve()
    watch_said = capsys.readouterr().err.strip().splitlines()
    problem = f"{variable}='{value}' is not a number of seconds (at least 0.1)"
    assert run_said == f"hangdoctor: error: {problem}"
    assert watch_said == [f"hangdoctor: warning: {problem}; using the default"]


def test_run_names_the_option_when_it_was_given_on_the_command_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["run", "--on-hang", "explode", "--", "true"]) == 2
    said = capsys.readouterr().err.strip().splitlines()[-1]
    assert said == "hangdoctor: error: --on-hang='explode' is not one of report, kill"
