"""Read the progress that instrumented processes report (`hangdoctor.instrument`).

The supervisor polls this about once a second while the job writes: a folder not made yet, a
file of a process that just exited or one from an older probe must not stop the reading, so
anything that does not parse or validate is skipped.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from hangdoctor.evidence.model import ProgressStatus

STATUS_GLOB = "status-*.json"


def read_statuses(status_dir: Path) -> list[ProgressStatus]:
    """Every valid `status-<pid>.json` in `status_dir`, by pid; an empty list without the dir."""
    statuses: list[ProgressStatus] = []
    try:
        paths = sorted(Path(status_dir).glob(STATUS_GLOB))
    except OSError:
        return statuses
    for path in paths:
        try:
            statuses.append(ProgressStatus.model_validate_json(path.read_bytes()))
        except (OSError, ValidationError):
            continue
    statuses.sort(key=lambda status: status.pid)
    return statuses
