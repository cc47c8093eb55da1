"""A capture of the whole job around one of its processes, or a capture that says it is not.

A rank's tree alone shows its peers as absent: the diagnosis would then read a live peer as
one that exited. So the job's launcher (or, without one, every rank) is captured, and what
still stays outside the capture is stated in the bundle as a `partial` capture problem.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from hangdoctor import bounded
from hangdoctor.capture.tree import CaptureOptions, capture_tree
from hangdoctor.evidence.model import Bundle, ProbeError
from hangdoctor.i18n import _, _n
from hangdoctor.probes.job_peers import JobScope, find_job

_FIND_JOB_TIMEOUT_S = 10.0  # reading the environment of every process of the user


@dataclass(frozen=True)
class ScopedCapture:
    """The capture, and a line for the user about what it covers (None: just the pid)."""

    bundle: Bundle
    scope: JobScope
    note: str | None


def partial_view(scope: JobScope, left_out: tuple[int, ...]) -> ProbeError:
    """The capture problem that says which of the job's processes the report does not see."""
    pids = ", ".join(map(str, left_out[:8]))
    if scope.launcher is not None:
        what = _("dump the launcher, pid {pid}", pid=scope.launcher)
    else:
        what = _("dump pid {pid} too", pid=left_out[0])
    return ProbeError(
        probe="job",
        pid=scope.launcher or left_out[0],
        kind="partial",
        message=_n(
            "partial view: {count} other process of this job was not captured (pid {pids}); {what}",
            "partial view: {count} other processes of this job were not captured (pid {pids}); "
            "{what}",
            len(left_out),
            pids=pids,
            what=what,
        ),
        help=_("a rank that is not in the capture is not known to have exited"),
    )


def capture_job(pid: int, options: CaptureOptions, whole_job: bool = True) -> ScopedCapture:
    """Capture `pid`'s tree and, with `whole_job`, the rest of the job it belongs to."""
    found, _failure = bounded.call(
        "job", functools.partial(find_job, pid), _FIND_JOB_TIMEOUT_S, pid=pid
    )
    scope = found or JobScope(pid, None, ())
    note = None
    if whole_job and scope.launcher is not None:
        bundle = capture_tree(scope.launcher, options)
        note = _(
            "pid {pid} is one process of a job of {ranks} ranks here; capturing the whole job "
            "from its launcher, pid {launcher}",
            pid=pid,
            ranks=len(scope.peers) + 1,
            launcher=scope.launcher,
        )
    elif whole_job and scope.peers:
        bundle = capture_tree(pid, options, also=scope.peers)
        note = _(
            "pid {pid} is one process of a job of {ranks} ranks here; capturing them all "
            "(pid {pids})",
            pid=pid,
            ranks=len(scope.peers) + 1,
            pids=", ".join(map(str, scope.peers[:8])),
        )
    else:
        bundle = capture_tree(pid, options)
    seen = {p.pid for s in bundle.snapshots for p in s.processes}
    left_out = tuple(p for p in scope.peers if p not in seen)
    if left_out:
        bundle = bundle.model_copy(
            update={"errors": (*bundle.errors, partial_view(scope, left_out))}
        )
    return ScopedCapture(bundle, scope, note)
