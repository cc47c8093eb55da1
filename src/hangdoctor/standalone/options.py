"""`watch()`'s options, from its arguments or, for a job started with no code change
(`HANGDOCTOR_WATCH=1 python train.py`), from environment variables named after `run`'s options.
Each setting is defined, and checked, in `hangdoctor.options`, for `run` and `watch()` alike.

An argument wins over its variable. A value that makes no sense is said in one line on stderr
(the line `run` stops on) and its default used: watching a job must never stop it from starting.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, TypeVar

from hangdoctor.i18n import _
from hangdoctor.options import (
    COMPILE_BUDGET,
    HANG_TIMEOUT,
    HOOK,
    ON_HANG,
    REPORT_DIR,
    InvalidSetting,
    Setting,
)


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
                name=HOOK.env,
                value=value,
                error=described(error),
            )
        )
        return None
    if not callable(found):
        warn(
            _(
                "warning: {name}='{value}' is not a function; no hook will be called",
                name=HOOK.env,
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
    timeout = _resolved(HANG_TIMEOUT, hang_timeout_s, env)
    budget = _resolved(COMPILE_BUDGET, compile_budget_s, env)
    directory = str(report_dir) if report_dir is not None else _variable(REPORT_DIR, env)
    policy = _resolved(ON_HANG, on_hang, env)
    chosen: HangHook | str | None
    if hook is None:
        chosen = _variable(HOOK, env) or None
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


def _variable(setting: Setting, env: Mapping[str, str]) -> str | None:
    return env.get(setting.env) if setting.env is not None else None


_Value = TypeVar("_Value", covariant=True)


class _Parses(Protocol[_Value]):
    """A setting that parses its value (`options.Seconds`, `options.Choice`)."""

    @property
    def name(self) -> str: ...
    @property
    def env(self) -> str | None: ...
    @property
    def default(self) -> _Value: ...
    def parse(self, value: object, given_as: str) -> _Value: ...


def _resolved(setting: _Parses[_Value], value: object, env: Mapping[str, str]) -> _Value:
    """The setting from its argument, else its variable; its default when the value makes no
    sense (said in one line)."""
    try:
        if value is not None:
            return setting.parse(value, setting.name)
        variable = env.get(setting.env) if setting.env is not None else None
        return setting.parse(variable, setting.env or setting.name)
    except InvalidSetting as error:
        _using_the_default(error)
        return setting.default


def _using_the_default(error: InvalidSetting) -> None:
    warn(_("warning: {problem}; using the default", problem=str(error)))
