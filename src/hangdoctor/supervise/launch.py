"""Start the job in its own process group, with the user's terminal.

Its own group lets us signal the whole tree at once. When we hold the terminal, the job's group
becomes the terminal's foreground group (as a shell does for a job), so that Ctrl-C, Ctrl-Z and
reads from the keyboard (pdb) reach the job exactly as without hangdoctor.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from hangdoctor.errors import ExitCode, LaunchError
from hangdoctor.i18n import _
from hangdoctor.supervise.output import Channel

_PR_SET_CHILD_SUBREAPER = 36


@dataclass
class Launched:
    """The running job."""

    process: subprocess.Popen[bytes]
    pgid: int
    terminal_fd: int | None  # the terminal we handed to the job, to take back at the end


def become_subreaper() -> bool:
    """Adopt the job's orphans (Linux), so that none escapes when the job is ended."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def _foreground_terminal() -> int | None:
    """Our stdin, if it is a terminal whose foreground group is ours."""
    try:
        if os.isatty(0) and os.tcgetpgrp(0) == os.getpgrp():
            return 0
    except OSError:
        pass
    return None


def _hand_terminal(fd: int, pgid: int) -> None:
    # tcsetpgrp from what becomes a background group raises SIGTTOU: ignore it meanwhile.
    previous = signal.signal(signal.SIGTTOU, signal.SIG_IGN)
    try:
        with contextlib.suppress(OSError):
            os.tcsetpgrp(fd, pgid)
    finally:
        signal.signal(signal.SIGTTOU, previous)


def take_terminal_back(launched: Launched) -> None:
    """Make our group the terminal's foreground again."""
    if launched.terminal_fd is not None:
        _hand_terminal(launched.terminal_fd, os.getpgrp())


def _start_in_own_group(
    argv: list[str], stdout: int, stderr: int, env: dict[str, str]
) -> subprocess.Popen[bytes]:
    """Start `argv` as the leader of a new process group."""
    if sys.version_info >= (3, 11):
        return subprocess.Popen(argv, stdout=stdout, stderr=stderr, env=env, process_group=0)
    return subprocess.Popen(argv, stdout=stdout, stderr=stderr, env=env, preexec_fn=os.setpgrp)


def cannot_start(program: str, error: OSError) -> LaunchError:
    """Why `program` could not be started, with the exit code that says so: not found, or the
    system's reason."""
    if isinstance(error, FileNotFoundError):
        return LaunchError(
            _("command not found: {command}", command=program), ExitCode.COMMAND_NOT_FOUND
        )
    return LaunchError(
        _("cannot run {command}: {error}", command=program, error=error.strerror or error),
        ExitCode.NOT_EXECUTABLE,
    )


def launch(command: Sequence[str], env: Mapping[str, str], channels: list[Channel]) -> Launched:
    """Start `command`; raises LaunchError when it cannot be run."""
    stdout_fd = channels[0].child_fd
    stderr_fd = channels[-1].child_fd
    try:
        process = _start_in_own_group(list(command), stdout_fd, stderr_fd, dict(env))
    except PermissionError as error:
        raise LaunchError(
            _("permission denied: {command}", command=command[0]), ExitCode.NOT_EXECUTABLE
        ) from error
    except OSError as error:
        raise cannot_start(command[0], error) from error
    finally:
        for channel in channels:
            with contextlib.suppress(OSError):
                os.close(channel.child_fd)
    terminal = _foreground_terminal()
    if terminal is not None:
        _hand_terminal(terminal, process.pid)
    return Launched(process=process, pgid=process.pid, terminal_fd=terminal)


def exit_status(returncode: int) -> tuple[int, int | None]:
    """(shell-style exit code, signal) from Popen's returncode (negative for signals)."""
    if returncode < 0:
        return 128 - returncode, -returncode
    return returncode, None
