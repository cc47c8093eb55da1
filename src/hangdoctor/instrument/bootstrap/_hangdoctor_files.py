"""How the probe's parts write into the status folder: files private to the owner, replaced
whole, and the supervisor's request file that asks every process for what only it knows."""

from __future__ import annotations

import os
from typing import IO, TYPE_CHECKING

if TYPE_CHECKING:
    from hangdoctor.instrument.bootstrap import _hangdoctor_protocol as protocol
    from hangdoctor.instrument.bootstrap import _hangdoctor_state as shared
else:
    import _hangdoctor_protocol as protocol
    import _hangdoctor_state as shared

probe = shared.probe

# Report files are the owner's only, unless the user asked hangdoctor for shared reports.
FILE_MODE = 0o644 if os.environ.get("HANGDOCTOR_SHARED_REPORTS", "") not in ("", "0") else 0o600
FLIGHT_RECORDER_REQUEST = protocol.REQUEST_FILE


def private_open(path: str) -> IO[str]:
    return os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE), "w")


def write_atomically(name: str, body: str) -> None:
    """`name` in the status folder, replaced whole: a reader never sees half of it."""
    assert probe.directory is not None
    temporary = os.path.join(probe.directory, f".{name}.tmp")
    with private_open(temporary) as handle:
        handle.write(body)
    os.replace(temporary, os.path.join(probe.directory, name))


def request_stamp(name: str = FLIGHT_RECORDER_REQUEST) -> int | None:
    """When the supervisor last asked (the request file's time), or None: never."""
    if probe.directory is None:
        return None
    request = os.path.join(probe.directory, name)
    return os.stat(request).st_mtime_ns if os.path.exists(request) else None
