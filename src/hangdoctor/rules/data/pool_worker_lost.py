"""HD204 data.worker_killed: a multiprocessing.Pool worker died (the OOM killer, a signal)
while the parent waits in `Pool.map` for its results: the pool starts a replacement, but the
task the dead worker held is never finished, so `map` never returns.

Two things tell that a worker died: `run`'s timeline saw a child of the pool's process vanish,
or a worker's stack shows it was started by the pool's maintenance (`Pool._maintain_pool`, in
the worker-handler thread: a forked child keeps the stack it was forked from) in a pool whose
workers never retire by design (`maxtasksperchild` None): the pool only does that to replace
a worker that exited."""

from __future__ import annotations

from collections.abc import Iterable

from hangdoctor.analysis.frames import blame_frame, innermost_user_frame, python_frames
from hangdoctor.analysis.job import JobView
from hangdoctor.evidence.model import ProcessEvidence, ThreadEvidence
from hangdoctor.i18n import _
from hangdoctor.rules.base import Rule
from hangdoctor.rules.confidence import Confidence
from hangdoctor.rules.finding import Finding
from hangdoctor.rules.helpers import at, culprit, main_thread
from hangdoctor.taxonomy import Category

_POOL = "multiprocessing/pool.py"


#: Where a caller waits for a pool's results (`map` and `apply` wait in `ApplyResult.wait`).
_RESULT_WAITS = {"ApplyResult.wait", "ApplyResult.get", "IMapIterator.next"}


def _waits_on_pool(thread: ThreadEvidence | None) -> bool:
    frames = python_frames(thread.python.frames) if thread and thread.python else []
    return any(f.file.replace("\\", "/").endswith(_POOL) for f in frames)


def _pool_waiter(process: ProcessEvidence) -> ThreadEvidence | None:
    """The thread that waits for the pool's results: the main thread, else another that waits
    in a result (a library's loader thread: Keras runs a `PyDataset`'s pool from one)."""
    main = main_thread(process)
    if _waits_on_pool(main):
        return main
    return next(
        (
            t
            for t in process.threads
            if t.python is not None
            and any(
                f.file.replace("\\", "/").endswith(_POOL) and f.function in _RESULT_WAITS
                for f in python_frames(t.python.frames)
            )
        ),
        None,
    )


def _replacements(job: JobView, parent: ProcessEvidence) -> list[ProcessEvidence]:
    """Children of `parent` that its pool started to replace a worker that died."""
    found = []
    for child in job.processes:
        thread = main_thread(child) if child.ppid == parent.pid else None
        frames = python_frames(thread.python.frames) if thread and thread.python else []
        if not any(f.function.endswith("Pool._maintain_pool") for f in frames):
            continue
        start = next((f for f in frames if f.function.endswith("_repopulate_pool_static")), None)
        retire = (
            next((v.repr for v in start.locals if v.name == "maxtasksperchild"), None)
            if start is not None
            else None
        )
        if retire == "None":
            found.append(child)
    return found


class PoolWorkerLost(Rule):
    """a multiprocessing.Pool worker died and Pool.map waits forever

    Fires when: the main thread waits in `multiprocessing.Pool` (`map`, `apply`, `imap`) and a child
    process of it vanished while the job ran (`run`'s timeline), or a worker's stack shows the pool
    started it to replace one that exited (`maxtasksperchild` None): the task the dead worker held
    never finishes

    Why: `multiprocessing.Pool` replaces a worker that dies (the OOM killer, a signal, a crash in
    native code), but the task that worker held is lost: its result never arrives, so `Pool.map()`
    and friends wait for it forever with no error.

    Instead: Use `concurrent.futures.ProcessPoolExecutor`, which raises `BrokenProcessPool` when a
    worker dies, or wait with a timeout (`pool.map_async(...).get(timeout=...)`); find why the
    worker died (`dmesg` for `Out of memory: Killed process`) and lower the memory a single task
    needs.
    """

    id = "HD204"
    category = Category.DATA_WORKER_KILLED
    reads = "capture"
    specificity = 85

    def check(self, job: JobView) -> Iterable[Finding]:
        for process in job.processes:
            gone = [v for v in job.vanished if v.ppid == process.pid]
            thread = _pool_waiter(process)
            if thread is None:
                continue
            replacements = _replacements(job, process)
            if not gone and not replacements:
                continue
            frame = innermost_user_frame(thread.python.frames if thread.python else ())
            if frame is None:  # the library's own thread: the user's call into the library
                main = main_thread(process)
                thread = main or thread
                frame = innermost_user_frame(main.python.frames if main and main.python else ())
            if frame is None:
                frame = blame_frame(thread.python.frames) if thread.python else None
            pids = ", ".join(str(v.pid) for v in gone[:4])
            evidence = [
                _(
                    "worker process {pid} of {process} was last seen {seen:.1f} s after the "
                    "start and is gone",
                    pid=v.pid,
                    process=job.describe_process(process.pid),
                    seen=v.last_seen_s,
                )
                for v in gone[:4]
            ]
            evidence += [
                _(
                    "worker process {pid} was started by the pool's maintenance "
                    "(Pool._maintain_pool) to replace a worker that exited, in a pool "
                    "whose workers never retire (maxtasksperchild=None)",
                    pid=r.pid,
                )
                for r in replacements[:4]
            ]
            yield self.finding(
                confidence=Confidence.PROBABLE,
                title=_(
                    "A pool worker (pid {pids}) died; the pool waits forever at {place}",
                    pids=pids,
                    place=at(frame),
                )
                if gone
                else _("A pool worker died; the pool waits forever at {place}", place=at(frame)),
                explanation=_(
                    "multiprocessing.Pool replaces a worker that dies, but the task it "
                    "was running is lost: the result never arrives and `map` waits "
                    "for it forever. Workers are usually killed by the kernel's OOM "
                    "killer (a task needing far more memory than the others) or a "
                    "crash in native code."
                ),
                culprit=culprit(job, process, thread, frame),
                evidence=tuple(evidence),
                fixes=(
                    _(
                        "Check `dmesg` (or the container's events) for `Out of memory: Killed "
                        "process` with that pid, and lower the memory a single task needs "
                        "(split huge inputs, fewer processes)."
                    ),
                    _(
                        "Use concurrent.futures.ProcessPoolExecutor, which raises "
                        "BrokenProcessPool when a worker dies instead of waiting forever, or pass "
                        "a timeout (`pool.map_async(...).get(timeout=...)`)."
                    ),
                ),
            )
