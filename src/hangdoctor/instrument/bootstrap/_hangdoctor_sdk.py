"""What the job says about itself, for what the torch hooks cannot see: a heartbeat from a loop
without a torch optimizer (JAX, a custom loop), the phase it is in (an evaluation with a budget
of its own), marks along the way. `hangdoctor.heartbeat`, `phase` and `mark` call these once
the probe is armed, under `hangdoctor run` and under `hangdoctor.watch()` alike; the writer
thread puts them in the status file like every other count.

A heartbeat runs in the training loop at every step, so it does the least that can be done: a
few attribute writes, no lock (one writer per process that counts; the GIL orders them), no
call into the writer once it runs. The callers validate the arguments and catch everything.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hangdoctor.instrument.bootstrap import _hangdoctor_state as shared
    from hangdoctor.instrument.bootstrap import _hangdoctor_writer as writer
else:
    import _hangdoctor_state as shared
    import _hangdoctor_writer as writer

probe = shared.probe
_status = shared.status
_now = time.time


def heartbeat(step: int | None) -> None:
    """One step of the job's own loop: a training event, as an optimizer step is."""
    status = _status
    status.heartbeats += 1
    status.last_heartbeat_at = _now()
    if step is not None:
        status.heartbeat_step = step
    status.version += 1
    if not probe.writer_started:
        writer.changed()


def enter_phase(name: str, budget_s: float | None) -> list[object]:
    """The job entered a phase; returns its entry, which `leave_phase` takes back."""
    entry: list[object] = [name, budget_s, _now()]
    _status.phases.append(entry)
    _moved()
    return entry


def leave_phase(entry: list[object]) -> None:
    """The job left the phase of `entry` (and any phase entered inside it and not left: a
    generator's `with` abandoned half way)."""
    phases = _status.phases
    for index in range(len(phases) - 1, -1, -1):
        if phases[index] is entry:
            del phases[index:]
            break
    _moved()


def mark(text: str) -> None:
    """A moment the job names ("after forward"), kept with its time among the last few."""
    _status.marks.append((_now(), text))
    writer.changed()


def _moved() -> None:
    _status.phase_moves += 1
    writer.changed()
