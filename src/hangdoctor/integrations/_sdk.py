"""The one place the trainer integrations call hangdoctor's in-job SDK (`hangdoctor.heartbeat`,
`hangdoctor.phase`, `hangdoctor.mark`, `hangdoctor.set_rank`).

Why an adapter rather than direct calls:

- A framework announces the start and the end of a phase in two separate hooks
  (`on_validation_start` / `on_validation_end`), while the SDK's phase is a context manager.
  The adapter holds each open context manager on a stack, so that an end closes what its start
  opened, an end without a start does nothing, and an exception hook can close everything a
  callback left open.
- A monitoring aid must never stop a training: every call here swallows its own failure (and
  logs it at debug level), and an SDK function that is missing (an older hangdoctor, or an SDK
  that fails to import) makes its call a no-op.
- The SDK's functions are looked up when called, not when this module is imported, so
  importing an integration stays cheap and an SDK installed later is still found."""

from __future__ import annotations

import importlib
import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from hangdoctor.i18n import _

#: The module whose functions the integrations call.
SDK_MODULE = "hangdoctor"

logger = logging.getLogger("hangdoctor.integrations")


@dataclass
class _OpenPhase:
    name: str
    budget_s: float | None
    owner: object | None
    #: The SDK's context manager, entered; None when the SDK has no `phase` (or it failed).
    context: AbstractContextManager[object] | None


_lock = threading.RLock()
_open: list[_OpenPhase] = []
_rank: tuple[int, int] | None = None


def _load_sdk() -> ModuleType | None:
    try:
        return importlib.import_module(SDK_MODULE)
    except Exception:
        logger.debug(_("hangdoctor's SDK could not be imported"), exc_info=True)
        return None


def _sdk_function(name: str) -> Callable[..., Any] | None:
    """The SDK's function `name`, or None when there is none."""
    module = _load_sdk()
    if module is None:
        return None
    try:
        function = getattr(module, name, None)
    except Exception:  # a lazy attribute whose import failed
        logger.debug(_("hangdoctor's SDK has no usable {name}", name=name), exc_info=True)
        return None
    return function if callable(function) else None


def _call(name: str, *args: Any, **kwargs: Any) -> Any:
    """The SDK's `name(*args, **kwargs)`, or None when it is missing or fails."""
    function = _sdk_function(name)
    if function is None:
        return None
    try:
        return function(*args, **kwargs)
    except Exception:
        logger.debug(_("hangdoctor.{name} failed and was skipped", name=name), exc_info=True)
        return None


def heartbeat(step: int | None = None) -> None:
    """Progress: one more training step (`step`, the global step, when known)."""
    _call("heartbeat", step)


def mark(label: str) -> None:
    """A timestamped mark the report shows."""
    _call("mark", label)


def set_rank(rank: int, world_size: int) -> None:
    """Which rank of how many this process is, as the framework numbers them. Passed on to the
    SDK when it changes (the SDK otherwise reads RANK and WORLD_SIZE from the environment,
    which not every launcher sets)."""
    global _rank
    with _lock:
        if _rank == (rank, world_size):
            return
        _rank = (rank, world_size)
    _call("set_rank", rank, world_size)


def current_rank() -> tuple[int, int] | None:
    """The last (rank, world_size) set_rank was given."""
    return _rank


def enter_phase(name: str, budget_s: float | None = None, *, owner: object | None = None) -> None:
    """Start phase `name` (with `budget_s` seconds before it counts as hung; None: the SDK's
    usual threshold), until exit_phase(name). `owner` (a callback) lets exit_all_phases close
    only what that owner opened."""
    context: AbstractContextManager[object] | None = None
    candidate = _call("phase", name, budget_s=budget_s)
    if candidate is not None:
        try:
            candidate.__enter__()
            context = candidate
        except Exception:
            logger.debug(_("hangdoctor.phase({name}) could not start", name=name), exc_info=True)
    with _lock:
        _open.append(_OpenPhase(name, budget_s, owner, context))


def exit_phase(
    name: str, error: BaseException | None = None, *, owner: object | None = None
) -> bool:
    """End the innermost open phase `name` (of `owner`, when given): `error` is the exception
    that ended it, if one did. Phases the same owner opened inside it are ended first (their
    own end was missed). Returns False, and does nothing, when no such phase is open."""
    with _lock:
        index = next(
            (
                i
                for i in range(len(_open) - 1, -1, -1)
                if _open[i].name == name and (owner is None or _open[i].owner is owner)
            ),
            None,
        )
        if index is None:
            return False
        target = _open[index]
        closing = [
            phase for phase in _open[index:] if phase is target or phase.owner is target.owner
        ]
        _open[index:] = [phase for phase in _open[index:] if phase not in closing]
    for phase in reversed(closing):
        _close(phase, error)
    return True


def exit_all_phases(
    error: BaseException | None = None, *, owner: object | None = None
) -> tuple[str, ...]:
    """End every open phase (of `owner`, when given), innermost first; returns their names.
    For exception hooks and the end of a run, where a start may have had no end."""
    with _lock:
        closing = [phase for phase in _open if owner is None or phase.owner is owner]
        _open[:] = [phase for phase in _open if phase not in closing]
    for phase in reversed(closing):
        _close(phase, error)
    return tuple(phase.name for phase in closing)


def open_phases(owner: object | None = None) -> tuple[str, ...]:
    """The names of the open phases (of `owner`, when given), outermost first."""
    with _lock:
        return tuple(phase.name for phase in _open if owner is None or phase.owner is owner)


@contextmanager
def phase(
    name: str, budget_s: float | None = None, *, owner: object | None = None
) -> Iterator[None]:
    """Phase `name` for the duration of a `with` block; an exception ends it and goes on."""
    enter_phase(name, budget_s, owner=owner)
    try:
        yield
    except BaseException as error:
        exit_phase(name, error, owner=owner)
        raise
    exit_phase(name, owner=owner)


def _close(phase: _OpenPhase, error: BaseException | None) -> None:
    if phase.context is None:
        return
    try:
        if error is None:
            phase.context.__exit__(None, None, None)
        else:
            phase.context.__exit__(type(error), error, error.__traceback__)
    except Exception:
        logger.debug(_("hangdoctor.phase({name}) could not end", name=phase.name), exc_info=True)


def framework_missing(integration: str, framework: str, package: str) -> ImportError:
    """The error an integration raises when its framework is not installed."""
    return ImportError(
        _(
            "{integration} needs {framework}, which is not installed here: pip install {package}",
            integration=integration,
            framework=framework,
            package=package,
        )
    )
