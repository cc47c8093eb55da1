"""Report files are private by default: evidence holds command lines, environment variables,
local variables and log lines, and even redacted they say much about a job. Directories are
made 0700 and files 0600 (the umask may narrow them further); HANGDOCTOR_SHARED_REPORTS=1 asks
for what the umask allows instead, for teams that share a report folder."""

from __future__ import annotations

import os
from pathlib import Path
from typing import BinaryIO

SHARED_ENV = "HANGDOCTOR_SHARED_REPORTS"


def shared() -> bool:
    """Whether the user asked for reports that others may read."""
    return os.environ.get(SHARED_ENV, "") not in ("", "0")


def make_dir(path: Path) -> None:
    """Create `path` (and its parents, with the usual modes) for a report; the folder itself is
    made private unless reports are shared. Raises OSError when it cannot be made."""
    path.mkdir(parents=True, exist_ok=True)
    if not shared():
        os.chmod(path, 0o700)


def _open(path: Path, flags: int) -> int:
    fd = os.open(path, flags | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o666 if shared() else 0o600)
    if not shared():
        try:
            os.fchmod(fd, 0o600)  # a file that was there before keeps no wider mode
        except OSError:
            os.close(fd)
            raise
    return fd


def write_text(path: Path, text: str) -> None:
    """Write a report file (UTF-8), private unless reports are shared."""
    with os.fdopen(_open(path, os.O_WRONLY), "w", encoding="utf-8") as handle:
        handle.write(text)


def open_log(path: Path) -> BinaryIO:
    """The job's output log: unbuffered, readable back, not in append mode (splice refuses
    that), private unless reports are shared."""
    return os.fdopen(_open(path, os.O_RDWR), "w+b", buffering=0)
