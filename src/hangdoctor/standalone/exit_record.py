"""How a watched process ends, written into the status file its probe keeps, for the sidecar
(`standalone.sidecar`) that names a failure once the process is gone.

`hangdoctor run` learns how the job ended from its exit status; `watch()` is no parent of the
job and cannot. So each process that `watch()` arms records it itself, just before it goes:

- an uncaught exception: `sys.excepthook`, chained to the hook there before (it prints the
  traceback as before), records the traceback as Python prints it and exit code 1
  (KeyboardInterrupt: 130, the user's Ctrl-C);
- `sys.exit(code)` and `os._exit(code)`: the code, as the call is made; a `sys.exit` made while
  handling an exception (a framework that prints the error itself and exits 1) records that
  exception too;
- a normal end: at exit, code 0 unless a code was recorded;
- a fatal signal: nothing here; faulthandler already writes `fault-<pid>.txt` (SIGSEGV,
  SIGABRT, ...) and `stopped-<pid>.txt` (SIGTERM). SIGKILL (the OOM killer) leaves no trace:
  the sidecar reads the lack of any record as that.

Threads that die of an exception are already written whole by the probe (`died-<pid>.txt`,
its `threading.excepthook`); they do not end the process. Each hook is cheap, written once at
the end, never raises into the job, and works only in the process that installed it (a forked
DataLoader worker is its parent's business). Tracebacks are redacted when read, as every file
of the status folder is.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
from types import ModuleType, TracebackType
from typing import Any, NoReturn

from hangdoctor.instrument.bootstrap import _hangdoctor_protocol as protocol

_TRACEBACK_CHARS = 16 * 1024  # the end of a longer traceback (chained exceptions) is kept
_INTERRUPTED = 130  # 128 + SIGINT, as the shell says of a Ctrl-C
HUNG_EXIT = 124

_installed_in: int | None = None  # the pid whose hooks these are


def _status() -> Any:
    return sys.modules["_hangdoctor_state"].status


def _writer() -> ModuleType:
    return sys.modules["_hangdoctor_writer"]


def _mine() -> bool:
    return _installed_in is not None and os.getpid() == _installed_in


def _record(code: int | None = None, traceback_text: str | None = None) -> None:
    """Set the fields (a code already set by sys.exit stays unless `code` is given) and write."""
    try:
        status = _status()
        if code is not None:
            status.exit_code = code
        if traceback_text is not None:
            status.exit_traceback = traceback_text[-_TRACEBACK_CHARS:]
        _writer().write_now()
    except Exception:
        pass


def _formatted(kind: type[BaseException], value: BaseException, tb: TracebackType | None) -> str:
    import traceback

    return "".join(traceback.format_exception(kind, value, tb))


def _exit_code(argument: object) -> int:
    """The process's exit code for `sys.exit(argument)`, as Python computes it."""
    if argument is None:
        return 0
    if isinstance(argument, int) and not isinstance(argument, bool):
        return argument & 0xFF
    return 1  # a message: printed, and the exit code is 1


def install() -> None:
    """Record how this process ends (idempotent). The probe must be armed."""
    global _installed_in
    if _mine() or protocol.PROBE_MODULE not in sys.modules:
        return
    _installed_in = os.getpid()
    previous_hook = sys.excepthook
    real_exit = sys.exit
    real_os_exit = os._exit

    def excepthook(
        kind: type[BaseException], value: BaseException, tb: TracebackType | None
    ) -> None:
        if _mine():
            try:
                code = _INTERRUPTED if issubclass(kind, KeyboardInterrupt) else 1
                _record(code, _formatted(kind, value, tb))
            except Exception:
                pass
        previous_hook(kind, value, tb)

    def exit(status: Any = None) -> NoReturn:  # stands in for sys.exit
        if _mine():
            try:
                code = _exit_code(status)
                handling = sys.exc_info()
                text = None
                if code != 0 and handling[1] is not None and handling[0] is not None:
                    text = _formatted(handling[0], handling[1], handling[2])
                _record(code, text)
            except Exception:
                pass
        real_exit(status)
        raise SystemExit(status)  # not reached: for the type checker

    def os_exit(status: int) -> NoReturn:  # stands in for os._exit
        if _mine():
            with contextlib.suppress(Exception):
                _record(int(status) & 0xFF)
        real_os_exit(status)

    exit.__doc__, os_exit.__doc__ = real_exit.__doc__, real_os_exit.__doc__
    sys.excepthook = excepthook
    sys.exit = exit
    os._exit = os_exit
    atexit.register(_at_exit)  # runs before the probe's own (atexit runs the last first)
    try:
        _status().records_exit = True
    except Exception:
        return
    _record()  # at once: a process killed in its first second is still known to record


def _at_exit() -> None:
    """A normal end (the interpreter exits): code 0 unless one was recorded."""
    if not _mine():
        return
    try:
        if _status().exit_code is None:
            _record(0)
    except Exception:
        pass


def note_hang_exit() -> None:
    """The watchdog ends this process at a hang (on_hang="kill"): its report is the hang's."""
    if not _mine():
        return
    try:
        _status().exit_hung = True
        _record(HUNG_EXIT)
    except Exception:
        pass
