"""What `run` tells the user while it watches: one line on stderr at a time."""

from __future__ import annotations

import contextlib
import sys


def say(message: str) -> None:
    """One line for the user on stderr, never mixed into the job's own output log."""
    with contextlib.suppress(OSError):
        sys.stderr.write(f"hangdoctor: {message}\n")
        sys.stderr.flush()
