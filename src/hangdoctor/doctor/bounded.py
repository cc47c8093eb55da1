"""Run a call or a command with a time limit; never raise, never hang the doctor.

Calls run in a daemon thread: a call stuck in the kernel (getaddrinfo on a dead DNS server, NVML
on a wedged driver) is abandoned, not waited for, and cannot keep the process from exiting.
"""

from __future__ import annotations

import subprocess
import threading
from collections.abc import Callable
from typing import TypeVar

from hangdoctor.doctor.facts import ProbeFailure

T = TypeVar("T")


def call(probe: str, fn: Callable[[], T], timeout_s: float) -> tuple[T | None, ProbeFailure | None]:
    """`fn()`'s value, or why there is none (it raised, or did not return in time)."""
    box: dict[str, object] = {}

    def target() -> None:
        try:
            box["value"] = fn()
        except BaseException as error:  # a probe never raises: record it instead
            box["error"] = error

    thread = threading.Thread(target=target, name=f"hangdoctor-probe-{probe}", daemon=True)
    thread.start()
    thread.join(timeout_s)
    if thread.is_alive():
        return None, ProbeFailure(probe=probe, kind="timeout",
                                  message=f"no answer within {timeout_s:g} s")
    if "error" in box:
        error = box["error"]
        return None, ProbeFailure(probe=probe, kind="failed",
                                  message=f"{type(error).__name__}: {error}")
    return box.get("value"), None  # type: ignore[return-value]


def command(probe: str, argv: list[str], timeout_s: float = 5.0
            ) -> tuple[str | None, ProbeFailure | None]:
    """A command's stdout, or why there is none."""
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s,
                              check=False, errors="replace", stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return None, ProbeFailure(probe=probe, kind="timeout",
                                  message=f"`{' '.join(argv)}` did not answer within "
                                          f"{timeout_s:g} s")
    except OSError as error:
        return None, ProbeFailure(probe=probe, kind="missing_tool", message=str(error))
    if done.returncode != 0:
        text = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
        return None, ProbeFailure(probe=probe, kind="failed", message=text)
    return done.stdout, None
