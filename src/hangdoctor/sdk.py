"""hangdoctor's calls for the job itself: `watch()` (a watchdog with no wrapper and no ptrace),
and what the automatic hooks cannot know: `heartbeat()`, `phase()`, `mark()`.

The same calls work under `hangdoctor run` (they feed its supervisor through the status files)
and under `watch()`; with neither they do nothing. None of them ever raises into the job, and
this module is cheap to import: the probe is loaded by the first call that needs it.
"""

from __future__ import annotations

import math
import os

from hangdoctor.standalone.watching import Watching

# Annotations are strings, and these imports are for the type checker only: `typing` alone
# would cost every `import hangdoctor` some 15 ms.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import ModuleType, TracebackType
    from typing import Any

    from hangdoctor.standalone.options import HangHook

_MAX_TEXT = 200  # characters of a mark or a phase name


#: Before the first call: whether anything watches this process is not known yet.
_UNRESOLVED: Any = object()
_sdk: Any = _UNRESOLVED  # the probe's SDK part (`_hangdoctor_sdk`); None: nothing watches


def _resolve() -> ModuleType | None:
    global _sdk
    try:
        from hangdoctor.standalone.arming import armed_sdk

        found = armed_sdk()
    except Exception:
        found = None
    _sdk = found
    return found


def heartbeat(step: int | None = None) -> None:
    """One step of a loop that no torch optimizer counts (JAX, a custom loop): progress, as an
    optimizer step is. `step`: the job's own step number, shown in the report. Never raises."""
    try:
        sdk = _sdk
        if sdk is None:
            return
        if sdk is _UNRESOLVED:
            sdk = _resolve()
            if sdk is None:
                return
        if step is not None and type(step) is not int:
            step = _step(step)
        sdk.heartbeat(step)
    except Exception:
        pass


def _step(value: object) -> int | None:
    """A step number from what was given (a numpy integer, a float that is whole), else None."""
    try:
        number = float(value)  # type: ignore[arg-type]
        return int(number) if math.isfinite(number) and number.is_integer() else None
    except Exception:  # whatever the object does when asked
        return None


def _text(value: object) -> str:
    try:
        text = value if isinstance(value, str) else str(value)
    except Exception:
        text = "?"
    return text[:_MAX_TEXT]


def mark(text: str) -> None:
    """Name this moment ("after forward"): the last marks are shown in the report with their
    times. Never raises."""
    try:
        sdk = _sdk if _sdk is not _UNRESOLVED else _resolve()
        if sdk is not None:
            sdk.mark(_text(text))
    except Exception:
        pass


class phase:
    """`with hangdoctor.phase("eval", budget_s=900):` the job is in a phase; one with a budget
    replaces the hang threshold while it runs (a long evaluation, a checkpoint). Phases nest;
    the report names the phase the job was in at a hang. Never raises, never swallows the
    job's exceptions."""

    __slots__ = ("_entry", "budget_s", "name")

    def __init__(self, name: str, budget_s: float | None = None) -> None:
        self.name = _text(name) or "phase"
        self.budget_s = _budget(budget_s)
        self._entry: list[object] | None = None

    def __enter__(self) -> phase:
        try:
            sdk = _sdk if _sdk is not _UNRESOLVED else _resolve()
            if sdk is not None:
                self._entry = sdk.enter_phase(self.name, self.budget_s)
        except Exception:
            self._entry = None
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        entry, self._entry = self._entry, None
        if entry is None:
            return
        try:
            if _sdk is not None and _sdk is not _UNRESOLVED:
                _sdk.leave_phase(entry)
        except Exception:
            pass


def _budget(value: object) -> float | None:
    """Seconds, positive and finite; anything else is no budget (the usual threshold)."""
    if value is None or isinstance(value, bool):
        return None
    try:
        seconds = float(value)  # type: ignore[arg-type]
    except Exception:  # whatever the object does when asked
        return None
    return seconds if math.isfinite(seconds) and seconds > 0 else None


_watching: Watching | None = None


def watch(
    hang_timeout_s: float | None = None,
    *,
    report_dir: str | os.PathLike[str] | None = None,
    on_hang: str | None = None,
    hook: HangHook | None = None,
    compile_budget_s: float | None = None,
) -> Watching | None:
    """Watch this job from inside it: `run`'s instrumentation and hang policy, and at a hang a
    separate process that writes the usual report directory; when the job fails, a sidecar
    that outlives it writes `failure-N/` (docs/watch.md). Arguments left out come from
    HANGDOCTOR_HANG_TIMEOUT, HANGDOCTOR_REPORT_DIR, HANGDOCTOR_ON_HANG (report, or kill: exit
    124 once reported), HANGDOCTOR_HOOK (module:function) and HANGDOCTOR_COMPILE_BUDGET.
    `hook(info)` is called after each hang's report. Under `hangdoctor run` it starts nothing
    of its own. Idempotent; never raises (None when it could not start)."""
    global _watching, _sdk
    if _watching is not None:
        return _watching
    try:
        from hangdoctor.standalone.start import start

        _watching = start(hang_timeout_s, report_dir, on_hang, hook, compile_budget_s)
    except Exception as error:
        try:
            from hangdoctor.i18n import _
            from hangdoctor.standalone.options import described, warn

            warn(
                _(
                    "warning: cannot watch this job ({error})",
                    error=described(error),
                )
            )
        except Exception:
            pass
        return None
    _sdk = _UNRESOLVED  # the probe is armed now: the next call finds it
    return _watching
