"""What the job's own processes tell of themselves where py-spy could not read them (ptrace
refused: a container without CAP_SYS_PTRACE, Yama, an undumpable process; or py-spy missing):
their Python stacks, from faulthandler on the stack signal (`probes.job_stacks`), and, where
/proc hides their threads' system calls and descriptors too, what each read of itself at the
supervisor's request (`probes.job_kernel`). The gap stays stated in the errors, first of them
what such stacks lack (`job_stack_note`)."""

from __future__ import annotations

from pathlib import Path

from hangdoctor.capture.job_stack_note import job_stack_note, kernel_wait_hidden
from hangdoctor.capture.tree import attach_stacks, busy
from hangdoctor.evidence.model import Bundle, PythonThread, Snapshot
from hangdoctor.probes.code_review import review
from hangdoctor.probes.job_kernel import (
    collect_kernel_states,
    with_self_read_waits,
    with_their_sockets,
)
from hangdoctor.probes.job_stacks import request_stacks


def _attached(snapshot: Snapshot, found: dict[int, dict[int, PythonThread]]) -> Snapshot:
    processes = tuple(
        attach_stacks(p, found[p.pid]) if p.pid in found else p for p in snapshot.processes
    )
    return snapshot.model_copy(update={"processes": processes})


def stacks_from_the_job(bundle: Bundle, status_dir: Path, asked: float | None) -> Bundle:
    """`bundle` with what its unreadable processes wrote of themselves; `asked`: when the
    supervisor dropped its request (None: not asked)."""
    if not bundle.snapshots:
        return bundle
    first, *later = bundle.snapshots
    missing = [p.pid for p in first.processes if not p.stacks_sampled and p.is_python is not False]
    if not missing:
        return bundle
    found = request_stacks(status_dir, missing)
    snapshots = [_attached(first, found), *later]
    # A second look at the busy ones, for the last snapshot, as py-spy reads a busy process
    # in every snapshot: a spinning loop is then seen twice in the same place.
    if later and found:
        last = later[-1]
        before = {p.pid: p for p in first.processes}
        span = last.elapsed_s - first.elapsed_s
        computing = [
            p.pid
            for p in last.processes
            if p.pid in found and p.pid in before and busy(p, before[p.pid], span)
        ]
        again = request_stacks(status_dir, computing) if computing else {}
        snapshots[-1] = _attached(last, again) if again else last
    hidden = [pid for pid in missing if kernel_wait_hidden(pid)]
    self_read = collect_kernel_states(status_dir, asked, hidden) if asked and hidden else {}
    if not found and not self_read:
        return bundle
    errors = bundle.errors
    if found:
        note = job_stack_note(found, kernel_hidden=any(pid not in self_read for pid in hidden))
        errors = (note, *errors)
    code = review(snapshots)  # the user's files on these stacks, which the capture did not see
    bundle = bundle.model_copy(
        update={
            "snapshots": tuple(snapshots),
            "errors": errors,
            "code_findings": code.findings,
            "code_settings": code.settings,
        }
    )
    return with_their_sockets(with_self_read_waits(bundle, self_read))
