"""The settings of a watched job, each defined once for hangdoctor's two doors: `hangdoctor run`'s
options (cli/run.py) and `hangdoctor.watch()`'s arguments (standalone/options.py). A setting
has one name (watch()'s argument, RunOptions' and WatchOptions' field), its option of `run`, its
environment variable, its valid values and its default, and one check: a value that makes no
sense gives the same line at both doors (`run` stops on it; `watch()` says it and goes on with
the default, for watching a job must never stop it from starting).

Cheap to import (`watch()` loads it inside the job): the standard library and `i18n` only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from hangdoctor.i18n import _

#: `HANGDOCTOR_WATCH=1 python train.py`: watch() every job started with it, no code change.
WATCH_ENV = "HANGDOCTOR_WATCH"


class InvalidSetting(ValueError):
    """A value that makes no sense for a setting; its message is the line both doors say."""


@dataclass(frozen=True)
class Setting:
    """A setting as both doors know it."""

    name: str  # watch()'s argument, and the field of RunOptions and WatchOptions
    env: str | None  # the environment variable watch() reads it from
    flag: str | None = None  # `hangdoctor run`'s option; None: watch() only
    run_reads_env: bool = False  # `run` reads `env` too (its option wins)

    @property
    def run_env(self) -> str | None:
        """The variable `run` reads for the option, if any."""
        return self.env if self.run_reads_env else None


@dataclass(frozen=True)
class Seconds(Setting):
    """A number of seconds, at least `minimum`; `default` when not given (None: decided by the
    hang policy, `supervise.policy`)."""

    minimum: float = 0.0
    default: float | None = None

    def parse(self, value: object, given_as: str) -> float | None:
        """The seconds in `value` (a number, or text from the command line or the environment);
        the default when it is None or blank. Raises InvalidSetting, naming `given_as`."""
        text = _given(value)
        if text is None:
            return self.default
        try:
            seconds = float(text)
        except ValueError:
            seconds = math.nan
        if not math.isfinite(seconds) or seconds < self.minimum:
            raise InvalidSetting(
                _(
                    "{name}='{value}' is not a number of seconds (at least {minimum:g})",
                    name=given_as,
                    value=text,
                    minimum=self.minimum,
                )
            )
        return seconds


@dataclass(frozen=True)
class Choice(Setting):
    """One word of `choices`, in any case; `default` when not given."""

    choices: tuple[str, ...] = ()
    default: str = ""

    def parse(self, value: object, given_as: str) -> str:
        """The choice in `value`; the default when it is None or blank. Raises
        InvalidSetting, naming `given_as`."""
        text = _given(value)
        if text is None:
            return self.default
        word = text.strip().lower()
        if word not in self.choices:
            raise InvalidSetting(
                _(
                    "{name}='{value}' is not one of {choices}",
                    name=given_as,
                    value=text,
                    choices=", ".join(self.choices),
                )
            )
        return word


def _given(value: object) -> str | None:
    """`value` as text; None when it is not given (None, or blank text)."""
    if value is None:
        return None
    text = value if isinstance(value, str) else str(value)
    return text if text.strip() else None


HANG_TIMEOUT = Seconds(
    "hang_timeout_s", "HANGDOCTOR_HANG_TIMEOUT", "--hang-timeout", run_reads_env=True, minimum=0.1
)
COMPILE_BUDGET = Seconds(
    "compile_budget_s",
    "HANGDOCTOR_COMPILE_BUDGET",
    "--compile-budget",
    run_reads_env=True,
    minimum=0.1,
)
ON_HANG = Choice(
    "on_hang", "HANGDOCTOR_ON_HANG", "--on-hang", choices=("report", "kill"), default="report"
)
KILL_GRACE = Seconds("kill_grace_s", None, "--kill-grace", minimum=0.0, default=10.0)
REPORT_DIR = Setting("report_dir", "HANGDOCTOR_REPORT_DIR", "--report-dir")
#: `module:function`, imported at the hang and called with its HangInfo.
HOOK = Setting("hook", "HANGDOCTOR_HOOK")
