"""Python stacks of every thread, from py-spy's JSON output, one call per process.

py-spy's `--json --subprocesses` silently drops the children, so each pid gets its own call.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from hangdoctor import bounded
from hangdoctor.evidence.model import Frame, LocalVariable, ProbeError, PythonThread
from hangdoctor.i18n import _
from hangdoctor.redact import REDACTED, is_secret_name, redact_value

_MAX_REPR = 200


@dataclass(frozen=True)
class StackOptions:
    """How to call py-spy."""

    native: bool = False
    locals: bool = True
    timeout_s: float = 10.0


def find_py_spy() -> str | None:
    """py-spy's binary: $HANGDOCTOR_PY_SPY, then PATH, then beside this interpreter."""
    configured = os.environ.get("HANGDOCTOR_PY_SPY")
    if configured:
        return configured if Path(configured).is_file() else None
    found = shutil.which("py-spy")
    if found:
        return found
    beside = Path(sys.executable).parent / "py-spy"
    return str(beside) if beside.is_file() else None


def py_spy_version(binary: str | None) -> str | None:
    """The version string py-spy reports, or None."""
    if binary is None:
        return None
    done, _ = bounded.run("py-spy", [binary, "--version"], 5.0)
    return (done.stdout.strip() or None) if done is not None else None


def _classify_failure(stderr: str) -> str:
    text = stderr.lower()
    if "permission denied" in text or "operation not permitted" in text:
        return "permission"
    if "no such file or directory" in text or "no such process" in text:
        return "exited"
    if "python" in text and ("failed to find" in text or "not a python" in text):
        return "not_python"
    return "failed"


def _first_error_line(stderr: str) -> str:
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    causes = [line for line in lines if line[:2].rstrip(":").isdigit() and ":" in line]
    head = next((line for line in lines if line.startswith("Error")), lines[0] if lines else "")
    if causes:
        return f"{head} ({causes[-1].split(':', 1)[1].strip()})"
    return head or _("py-spy failed without a message")


def _text(value: object, default: str = "?") -> str:
    return value if isinstance(value, str) else default


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _convert_local(raw: object) -> LocalVariable | None:
    if not isinstance(raw, dict):
        return None
    name = _text(raw.get("name"))
    value = raw.get("repr")
    shown = None
    if value is not None:
        shown = REDACTED if is_secret_name(name) else redact_value(str(value)[:_MAX_REPR])
    address = _int(raw.get("addr"))
    return LocalVariable(name=name, repr=shown, addr=address, arg=bool(raw.get("arg")))


def _convert_frame(raw: object) -> Frame | None:
    if not isinstance(raw, dict):
        return None
    locals_ = raw.get("locals")
    function = _text(raw.get("name"))
    file = _text(raw.get("filename") or raw.get("short_filename"))
    return Frame(
        function=function,
        file=file,
        line=max(0, _int(raw.get("line")) or 0),
        native=raw.get("module") is not None or _unsymbolised(function, file),
        locals=tuple(local for local in map(_convert_local, locals_) if local is not None)
        if isinstance(locals_, list)
        else (),
    )


def _unsymbolised(function: str, file: str) -> bool:
    """A native address py-spy could not name (`0x13839cd68`, file `?`, no module), between
    a runtime's C++ frames and the Python frame that called into it (TensorFlow's eager ops):
    native code, not a file of the user's named `?`."""
    return file in ("?", "") and function.startswith("0x")


def parse_py_spy_json(text: str) -> dict[int, PythonThread]:
    """py-spy's JSON dump, keyed by OS thread id. Raises ValueError when it is not JSON or
    not a list of threads; entries of the wrong shape are skipped."""
    threads_raw = json.loads(text)
    if not isinstance(threads_raw, list):
        raise ValueError(f"expected a list of threads, got {type(threads_raw).__name__}")
    threads: dict[int, PythonThread] = {}
    for raw in threads_raw:
        if not isinstance(raw, dict):
            continue
        tid = _int(raw.get("os_thread_id"))
        if tid is None or tid <= 0:
            continue
        frames = raw.get("frames")
        name = raw.get("thread_name")
        threads[tid] = PythonThread(
            thread_id=_int(raw.get("thread_id")),
            name=name if isinstance(name, str) else None,
            active=bool(raw.get("active")),
            owns_gil=bool(raw.get("owns_gil")),
            frames=tuple(frame for frame in map(_convert_frame, frames) if frame is not None)
            if isinstance(frames, list)
            else (),
        )
    return threads


def dump_stacks(
    pid: int, binary: str | None, options: StackOptions
) -> tuple[dict[int, PythonThread], ProbeError | None]:
    """Stacks of every thread of `pid`, or the reason there are none.

    Reading locals is the part of py-spy most likely to fail on an odd object; when it does,
    the stacks are read again without them rather than lost.
    """
    stacks, problem = _dump_once(pid, binary, options)
    if problem is not None and problem.kind == "failed" and options.locals:
        without = StackOptions(native=options.native, locals=False, timeout_s=options.timeout_s)
        stacks, problem = _dump_once(pid, binary, without)
    if problem is not None and problem.kind == "failed" and options.native:
        return _without_native(pid, binary, options, problem)
    return stacks, problem


def _without_native(
    pid: int, binary: str | None, options: StackOptions, problem: ProbeError
) -> tuple[dict[int, PythonThread], ProbeError | None]:
    """py-spy gives up on the whole process when libunwind cannot unwind one thread's native
    frames (a thread inside XLA's JIT-compiled code has no unwind tables): the Python stacks
    are read again without native frames, and the failure is kept as a note under its own
    probe name (`py-spy --native`), which says what is missing, not that the stacks are."""
    python_only = StackOptions(native=False, locals=options.locals, timeout_s=options.timeout_s)
    stacks, again = dump_stacks(pid, binary, python_only)
    if again is not None:
        return stacks, again
    note = ProbeError(
        probe=NATIVE_PROBE,
        pid=pid,
        kind="failed",
        message=_(
            "native frames could not be unwound ({error}); Python stacks read without them",
            error=problem.message,
        ),
    )
    return stacks, note


#: The probe name of a note that a process's native frames are missing (its stacks are not).
NATIVE_PROBE = "py-spy --native"


def _dump_once(
    pid: int, binary: str | None, options: StackOptions
) -> tuple[dict[int, PythonThread], ProbeError | None]:
    if binary is None:
        return {}, ProbeError(
            probe="py-spy", pid=pid, kind="missing_tool", message=_("py-spy was not found")
        )
    command = [binary, "dump", "--pid", str(pid), "--json"]
    if options.native:
        command.append("--native")
    if options.locals:
        command.append("--locals")
    done, error = bounded.run(
        "py-spy", command, options.timeout_s, pid=pid, env={**os.environ, "RUST_BACKTRACE": "0"}
    )
    if done is None:
        return {}, error
    if done.returncode != 0:
        return {}, ProbeError(
            probe="py-spy",
            pid=pid,
            kind=_classify_failure(done.stderr),
            message=_first_error_line(done.stderr),
        )
    try:
        return parse_py_spy_json(done.stdout), None
    except ValueError as error:
        return {}, ProbeError(
            probe="py-spy",
            pid=pid,
            kind="failed",
            message=_("unreadable py-spy output: {error}", error=error),
        )
