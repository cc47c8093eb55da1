"""HD553 env.version_incompatible: a `ProcessPoolExecutor` has work pending and no worker
process, its manager saw a worker exit and did not mark the pool broken: CPython's bug
gh-115634, where a pool with `max_tasks_per_child` stops starting workers once one retires
(present since 3.11; the fix, https://github.com/python/cpython/pull/140900, opened in November
2025, was merged into CPython's main branch on 2026-07-03 and says it affects 3.11 through
3.15.0b3: 3.15.0b4 and later have it; which 3.11-3.14 point releases got a backport is not
known here, so the advice names the main-branch release and the workaround).

On a Python without the bug a retired worker is replaced, and a worker that dies breaks the pool
(`BrokenProcessPool` reaches the caller); work waiting in a pool with no worker and no error
is that bug's signature. The evidence: the executor's `_ExecutorManagerThread` waiting with an
empty `worker_sentinels`, `process_exited` true and `is_broken` false (its frames' locals), and
a thread waiting for one of the pool's futures."""

from __future__ import annotations

from collections.abc import Iterable

from hangdoctor.analysis.frames import innermost_user_frame, python_frames, short_file
from hangdoctor.analysis.job import JobView
from hangdoctor.evidence.model import CodeSetting, ThreadEvidence
from hangdoctor.i18n import _
from hangdoctor.rules.base import Rule
from hangdoctor.rules.confidence import Confidence
from hangdoctor.rules.finding import Finding
from hangdoctor.rules.helpers import at, culprit, frames_of
from hangdoctor.taxonomy import Category

_PROCESS_POOL = "concurrent/futures/process.py"
_FUTURES = "concurrent/futures/_base.py"
BUG = "https://github.com/python/cpython/pull/140900"


def _manager_without_workers(thread: ThreadEvidence) -> bool:
    """The pool's manager thread, waiting, with no worker left and the pool not broken."""
    values: dict[str, str] = {}
    for frame in python_frames(frames_of(thread)):
        if (
            frame.file.replace("\\", "/").endswith(_PROCESS_POOL)
            and "_ExecutorManagerThread" in frame.function
        ):
            values.update({v.name: v.repr or "" for v in frame.locals})
    return (
        values.get("worker_sentinels") == "[]"
        and values.get("process_exited") == "True"
        and values.get("is_broken", "False") == "False"
    )


def _waits_on_a_future(thread: ThreadEvidence) -> bool:
    return any(
        f.file.replace("\\", "/").endswith(_FUTURES)
        and f.function.split(".")[-1] in ("result", "wait", "as_completed")
        for f in python_frames(frames_of(thread))
    )


class ProcessPoolWithoutWorkers(Rule):
    """a ProcessPoolExecutor stopped starting workers (CPython gh-115634)

    Fires when: a thread waits for a `ProcessPoolExecutor` future while the pool's manager thread
    has no worker left, saw one exit and did not break the pool: the Python bug that stops replacing
    workers retired by `max_tasks_per_child`

    Why: CPython's bug gh-115634: a `ProcessPoolExecutor` with `max_tasks_per_child` does not
    replace a worker that retires at its task limit. Once the last one retires the pool has no
    worker, is not marked broken, and the tasks still queued wait forever with no error.

    Instead: Upgrade to a Python with the fix of gh-115634 (3.15.0b4 or later; for 3.11-3.14 check
    your point release's changelog), or drop `max_tasks_per_child` (on Linux
    `multiprocessing.Pool(maxtasksperchild=...)` replaces workers correctly); pass a timeout to
    `future.result(timeout=...)`.
    """

    id = "HD553"
    category = Category.ENV_VERSION_INCOMPATIBLE
    reads = "capture"
    specificity = 85

    def check(self, job: JobView) -> Iterable[Finding]:
        for process in job.processes:
            if not any(_manager_without_workers(t) for t in process.threads):
                continue
            waiting = next((t for t in process.threads if _waits_on_a_future(t)), None)
            if waiting is None:
                continue
            line = innermost_user_frame(frames_of(waiting))
            setting = next(
                (s for s in job.bundle.code_settings if s.name == "max_tasks_per_child"), None
            )
            python = job.bundle.system.python or _("this Python")
            yield self.finding(
                confidence=Confidence.LIKELY,
                title=_(
                    "ProcessPoolExecutor with no worker left: the work waited for at "
                    "{place} never runs (CPython bug gh-115634, Python {python})",
                    place=at(line),
                    python=python,
                ),
                explanation=_(
                    "The pool's manager thread saw a worker exit, did not mark the pool broken, "
                    "and has no worker process left, while work is still queued. That is "
                    "CPython's bug gh-115634: with `max_tasks_per_child`, a worker that retires "
                    "at its task limit is not replaced, and the remaining tasks wait forever. "
                    "It affects Python 3.11 and later until the fix ({bug}).",
                    bug=BUG,
                ),
                culprit=culprit(job, process, waiting, line),
                evidence=(
                    _(
                        "the pool's _ExecutorManagerThread waits with worker_sentinels=[] "
                        "(no worker), process_exited=True, is_broken=False"
                    ),
                    _(
                        "{thread} (tid {tid}) waits for a future at {place}",
                        thread=waiting.comm or _("thread"),
                        tid=waiting.tid,
                        place=at(line),
                    ),
                    *((_setting_words(setting),) if setting is not None else ()),
                    f"Python {python}",
                ),
                fixes=(
                    _(
                        "Upgrade Python to one with the fix of gh-115634 (3.15.0b4 or later; for "
                        "3.11-3.14, check your point release's changelog for gh-115634), or drop "
                        "`max_tasks_per_child` (on Linux, `multiprocessing.Pool(maxtasksperchild="
                        "...)` replaces workers correctly)."
                    ),
                    _(
                        "Pass a timeout to `result()` so that a stalled pool fails instead of hanging."
                    ),
                ),
            )


def _setting_words(setting: CodeSetting) -> str:
    value = setting.value if setting.value is not None else "..."
    return _(
        "the code sets max_tasks_per_child={value} at {file}:{line}",
        value=value,
        file=short_file(setting.file),
        line=setting.line,
    )
