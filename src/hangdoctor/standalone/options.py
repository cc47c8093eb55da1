"""`watch()`'s options, from its arguments or, for a job started with no code change
(`HANGDOCTOR_WATCH=1 python train.py`), from environment variables named after `run`'s options.

An argument wins over its variable. A value that makes no sense is said in one line on stderr
and its default used: watching a job must never stop it from starting.
"""

from __future__ import annotations

import importlib
import math
import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from hangdoctor.i18n import _

WATCH_ENV = "HANGDOCTOR_WATCH"
HANG_TIMEOUT_ENV = "HANGDOCTOR_HANG_TIMEOUT"
COMPILE_BUDGET_ENV = "HANGDOCTOR_COMPILE_BUDGET"
REPORT_DIR_ENV = "HANGDOCTOR_REPORT_DIR"
ON_HANG_ENV = "HANGDOCTOR_ON_HANG"
HOOK_ENV = "HANGDOCTOR_HOOK"  # module:function, called with the HangInfo
ON_HANG_CHOICES = ("report", "kill")


@dataclass(frozen=True)
class HangInfo:
    """What a user hook is given once the report of a hang is written."""

    report_dir: Path  # the hang's own folder, `<report dir>/hang-N`
    category: str | None  # the root cause's taxonomy category; None when no rule explained it
    title: str | None
    culprit: str | None  # `file:line` of the culprit, when one is known
    phase: str | None  # the job's phase at the hang (`hangdoctor.phase`)
    ending_job: bool  # on_hang="kill": the process exits with 124 after the hook


HangHook = Callable[[HangInfo], object]


@dataclass(frozen=True)
class WatchOptions:
    """How to watch; None: `run`'s default."""

    hang_timeout_s: float | None = None
    compile_budget_s: float | None = None
    report_dir: Path | None = None
    on_hang: str = "report"  # or kill: exit with 124 once the report is written
    #: Called with a HangInfo after each hang's report; from HANGDOCTOR_HOOK, `module:function`,
    #: imported at the hang (at start-up the script's folder is not on sys.path yet).
    hook: HangHook | str | None = None


def warn(message: str) -> None:
    """One line for the user on stderr, hangdoctor's, never an exception into the job."""
    try:
        sys.stderr.write(f"hangdoctor: {message}\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


def described(error: BaseException) -> str:
    """An exception in one line: its type and message."""
    return f"{type(error).__name__}: {error}"


def _seconds(name: str, value: str | None) -> float | None:
    if value is None or not value.strip():
        return None
    try:
        seconds = float(value)
    except ValueError:
        seconds = math.nan
    if not math.isfinite(seconds) or seconds < 0.1:
        warn(
            _(
                "warning: {name}='{value}' is not a number of seconds (at least 0.1); using the "
                "default",
                name=name,
                value=value,
            )
        )
        return None
    return seconds


def load_hook(value: str | None) -> HangHook | None:
    """`package.module:function`, imported; None (said on stderr) when it cannot be."""
    if not value:
        return None
    module_name, _sep, attribute = value.partition(":")
    try:
        found = getattr(importlib.import_module(module_name), attribute)
    except Exception as error:
        warn(
            _(
                "warning: {name}='{value}' cannot be loaded ({error}); no hook will be called",
                name=HOOK_ENV,
                value=value,
                error=described(error),
            )
        )
        return None
    if not callable(found):
        warn(
            _(
                "warning: {name}='{value}' is not a function; no hook will be called",
                name=HOOK_ENV,
                value=value,
            )
        )
        return None
    hook: HangHook = found
    return hook


def resolve(
    hang_timeout_s: object = None,
    compile_budget_s: object = None,
    report_dir: object = None,
    on_hang: object = None,
    hook: object = None,
    environ: Mapping[str, str] | None = None,
) -> WatchOptions:
    """The options in force: each argument given, else its environment variable, else the
    default. Never raises."""
    env = os.environ if environ is None else environ

    def given(value: object, name: str) -> str | None:
        return env.get(name) if value is None else str(value)

    timeout = _seconds(
        HANG_TIMEOUT_ENV if hang_timeout_s is None else "hang_timeout_s",
        given(hang_timeout_s, HANG_TIMEOUT_ENV),
    )
    budget = _seconds(
        COMPILE_BUDGET_ENV if compile_budget_s is None else "compile_budget_s",
        given(compile_budget_s, COMPILE_BUDGET_ENV),
    )
    directory = given(report_dir, REPORT_DIR_ENV)
    policy = (given(on_hang, ON_HANG_ENV) or "report").strip().lower()
    if policy not in ON_HANG_CHOICES:
        warn(
            _("warning: on_hang '{value}' is not one of report, kill; reporting only", value=policy)
        )
        policy = "report"
    chosen: HangHook | str | None
    if hook is None:
        chosen = env.get(HOOK_ENV) or None
    elif callable(hook):
        chosen = hook
    else:
        warn(_("warning: the hook given to watch() is not a function; no hook will be called"))
        chosen = None
    return WatchOptions(
        hang_timeout_s=timeout,
        compile_budget_s=budget,
        report_dir=Path(directory).expanduser() if directory else None,
        on_hang=policy,
        hook=chosen,
    )
