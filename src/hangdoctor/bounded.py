"""The one way hangdoctor calls anything outside its own process: with a time limit, never
raising, never hanging. `run`, `dump` and `doctor` all go through here.

Calls run in a daemon thread: a call stuck in the kernel (getaddrinfo on a dead DNS server, NVML
on a wedged driver, a read of /proc on a dead NFS mount) is abandoned, not waited for, and cannot
keep the process from exiting. Commands run as children killed at their deadline.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
from collections.abc import Callable, Mapping
from typing import TypeVar

from hangdoctor.evidence.model import ProbeError

T = TypeVar("T")


def call(
    probe: str, fn: Callable[[], T], timeout_s: float, *, pid: int | None = None
) -> tuple[T | None, ProbeError | None]:
    """`fn()`'s value, or why there is none (it raised, or did not return in time)."""
    value: list[T] = []
    raised: list[BaseException] = []

    def target() -> None:
        try:
            value.append(fn())
        except BaseException as error:  # a probe never raises: record it instead
            raised.append(error)

    thread = threading.Thread(target=target, name=f"hangdoctor-probe-{probe}", daemon=True)
    thread.start()
    thread.join(timeout_s)
    if thread.is_alive():
        return None, ProbeError(
            probe=probe, pid=pid, kind="timeout", message=f"no answer within {timeout_s:g} s"
        )
    if raised:
        error = raised[0]
        return None, ProbeError(
            probe=probe, pid=pid, kind="failed", message=f"{type(error).__name__}: {error}"
        )
    return (value[0] if value else None), None


def _run_own_group(
    argv: list[str], timeout_s: float, env: Mapping[str, str] | None
) -> subprocess.CompletedProcess[str]:
    """subprocess.run in a session of its own, whose whole process group is killed at the
    deadline: a wrapper script's children die with it instead of living on."""
    with subprocess.Popen(
        argv,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        errors="replace",
        env=dict(env) if env is not None else None,
        start_new_session=True,
    ) as process:
        try:
            out, err = process.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(OSError):
                os.killpg(process.pid, signal.SIGKILL)  # unreaped, its pid is still its own
            process.wait()
            raise
    return subprocess.CompletedProcess(argv, process.returncode, out, err)


def run(
    probe: str,
    argv: list[str],
    timeout_s: float,
    *,
    pid: int | None = None,
    env: Mapping[str, str] | None = None,
    own_group: bool = False,
) -> tuple[subprocess.CompletedProcess[str] | None, ProbeError | None]:
    """The finished command, whatever its exit status (the caller reads it), or why it did not
    finish: not found, or killed at its deadline (with its whole process group: `own_group`)."""
    try:
        if own_group:
            done = _run_own_group(argv, timeout_s, env)
        else:
            done = subprocess.run(
                argv,
                capture_output=True,
                text=True,
                timeout=timeout_s,
                check=False,
                errors="replace",
                stdin=subprocess.DEVNULL,
                env=dict(env) if env is not None else None,
            )
    except subprocess.TimeoutExpired:
        return None, ProbeError(
            probe=probe,
            pid=pid,
            kind="timeout",
            message=f"`{' '.join(argv[:3])}` did not answer within {timeout_s:g} s",
        )
    except OSError as error:
        return None, ProbeError(probe=probe, pid=pid, kind="missing_tool", message=str(error))
    return done, None


def command(
    probe: str, argv: list[str], timeout_s: float = 5.0
) -> tuple[str | None, ProbeError | None]:
    """A command's stdout, or why there is none (a non-zero exit is a failure)."""
    done, error = run(probe, argv, timeout_s)
    if done is None:
        return None, error
    if done.returncode != 0:
        text = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
        return None, ProbeError(probe=probe, kind="failed", message=text)
    return done.stdout, None
