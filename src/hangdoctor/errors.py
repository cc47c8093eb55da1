"""Errors that reach the user: each has one line of message, optional help, and an exit code.

`cli.main` is the one place that turns them into output and exit codes.
"""

from __future__ import annotations

from enum import IntEnum

from hangdoctor.i18n import N_


class ExitCode(IntEnum):
    """Every exit code hangdoctor itself chooses, for every command (the README's table).

    `run` otherwise exits with the job's own code, 128+N when the job died of signal N.
    """

    OK = 0  # nothing wrong found (dump, analyze, doctor, lint)
    PROBLEM_FOUND = 1  # an error or critical problem (a hang; doctor --strict: a warning too)
    USAGE = 2  # bad arguments or unreadable input
    NO_SUCH_PROCESS = 3  # dump: the target does not exist, or exited during the capture
    PERMISSION = 4  # dump: the target's stacks could not be read for lack of privileges
    STACKS_UNAVAILABLE = 5  # dump: py-spy missing, failing or timing out: only /proc evidence
    INTERNAL = 70  # a bug in hangdoctor (EX_SOFTWARE)
    HUNG_JOB_ENDED = 124  # run: hangdoctor ended a hung job (as `timeout` does)
    NOT_EXECUTABLE = 126  # run: the command exists but cannot be run
    COMMAND_NOT_FOUND = 127  # run: no such command
    INTERRUPTED = 130  # the user pressed Ctrl-C (128 + SIGINT)


class HangdoctorError(Exception):
    """An error the user can act on."""

    exit_code: ExitCode = ExitCode.INTERNAL

    def __init__(self, message: str, *, help: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.help = help


class BadInputError(HangdoctorError):
    """The user gave us something we cannot use."""

    exit_code = ExitCode.USAGE


class LaunchError(HangdoctorError):
    """`run` could not start the command."""

    def __init__(self, message: str, exit_code: ExitCode, help: str | None = None) -> None:
        super().__init__(message, help=help)
        self.exit_code = exit_code


class NoSuchProcessError(HangdoctorError):
    """The process to capture does not exist."""

    exit_code = ExitCode.NO_SUCH_PROCESS


#: Hints given where they are used, translated there (`_(PTRACE_HELP)`).
PTRACE_HELP = N_(
    "reading Python stacks needs ptrace: run as the job's user or as root with CAP_SYS_PTRACE; "
    "in Docker add `--cap-add SYS_PTRACE`, in Kubernetes "
    "`securityContext.capabilities.add: [SYS_PTRACE]`; if /proc/sys/kernel/yama/ptrace_scope "
    "is 1 or more, run `sudo sysctl kernel.yama.ptrace_scope=0` or use sudo"
)

PY_SPY_HELP = N_("install py-spy (`pip install py-spy`) or point HANGDOCTOR_PY_SPY at its binary")
