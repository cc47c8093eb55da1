"""HD358 distributed.rendezvous: a task of JAX's coordination service connected a second time
with a new incarnation (a restarted process, or a second process given the same `process_id`),
and the service aborted every process of the job.

The usual second process is one the job started itself: a worker made with `spawn` (a
`multiprocessing` pool, a data loader's workers) imports the main script again, and a
`jax.distributed.initialize` at the script's top level runs again in it, as the same task
(https://github.com/google/grain/issues/802). The instrumentation notes which task each process
registered as, and the line that asked (`ProgressStatus.distributed_init`): the processes that
registered as the task the service names are the culprit and the line to move."""

from __future__ import annotations

from collections.abc import Iterable

from hangdoctor.analysis.frames import short_location
from hangdoctor.analysis.job import JobView
from hangdoctor.analysis.logs import LogKind, LogMatch
from hangdoctor.evidence.model import Frame, ProgressStatus
from hangdoctor.i18n import _
from hangdoctor.rules._log_rule import LogKindsRule
from hangdoctor.rules.confidence import Confidence
from hangdoctor.rules.finding import Culprit, Finding, Location
from hangdoctor.rules.log_helpers import cite
from hangdoctor.taxonomy import Category


class CoordinationTaskJoinedTwice(LogKindsRule):
    """a task joined JAX's coordination service twice

    Fires when: the coordination service says a task `unexpectedly tried to connect with a different
    incarnation`: names the processes that registered as that task and the line of
    `jax.distributed.initialize` they ran

    Why: JAX's coordination service admits each task (`process_id`) once. A process that connects as
    a task already there, with a new incarnation, is taken for a restart: the service puts the job
    in error and every process aborts. The second process is often the job's own: a `spawn` worker
    re-imports the main script, and a `jax.distributed.initialize` at its top level runs again
    there, as the same task.

    Instead: Call `jax.distributed.initialize` inside `main()` under `if __name__ == '__main__':`,
    never at import, so that spawned workers (multiprocessing, data loader workers) do not run it;
    restart a failed process together with the whole job.
    """

    id = "HD358"
    category = Category.DISTRIBUTED_RENDEZVOUS
    specificity = 80
    names_culprit = True
    kinds = (LogKind.COORDINATION_TASK_AGAIN,)

    def explain(self, job: JobView, found: list[LogMatch]) -> Iterable[Finding]:
        task = found[0].number("task")
        joined = _registered_as(job, task)
        if not joined:
            culprit = Culprit(rank=task) if task is not None else None
        else:
            last = joined[-1]  # the latest to register: the second one, when both were seen
            culprit = Culprit(pid=last.pid, rank=task, role="rank", location=_site(last))
        evidence = cite(found)
        evidence += [
            _(
                "pid {pid} registered as task {task} at {where}",
                pid=status.pid,
                task=task,
                where=_where(status),
            )
            for status in joined
        ]
        yield self.finding(
            confidence=Confidence.STRONG,
            title=_(
                "Task {task} joined JAX's coordination service a second time: the service "
                "aborted the job",
                task=task if task is not None else "?",
            ),
            explanation=_(
                "{count} processes of the job registered as task {task} "
                "(`jax.distributed.initialize`); the service admits a task once, and takes a "
                "second connection as a restart: every process aborts. A worker started with "
                "`spawn` imports the main script again and runs a top-level initialize again.",
                count=max(2, len(joined)),  # the service saw a second connection
                task=task if task is not None else "?",
            ),
            culprit=culprit,
            evidence=tuple(evidence),
            fixes=(
                _(
                    "Move `jax.distributed.initialize` (at {where}) into `main()`, under `if "
                    "__name__ == '__main__':`, so that processes the job spawns (a "
                    "multiprocessing pool, data loader workers) do not run it when they import "
                    "the script.",
                    where=_where(joined[-1]) if joined else _("the script's top level"),
                ),
                _(
                    "A process that restarted alone cannot rejoin: restart the whole job "
                    "(every process) instead."
                ),
            ),
        )


def _registered_as(job: JobView, task: int | None) -> list[ProgressStatus]:
    """The processes that called `jax.distributed.initialize` as `task`, in the order they
    were started (by pid, which a Linux host hands out in order until it wraps)."""
    record = job.record
    if record is None or task is None:
        return []
    return [
        status
        for status in record.progress
        if status.distributed_init is not None and status.distributed_init[0] == task
    ]


def _site(status: ProgressStatus) -> Location | None:
    """The process's call of initialize, with its source when the supervisor read it."""
    site = status.init_site
    if site is not None:
        return Location(file=site.file, line=site.line, function=site.function, code=site.code)
    if status.distributed_init is None:
        return None
    *_, file, line, function = status.distributed_init
    return Location(file=file, line=line, function=function)


def _where(status: ProgressStatus) -> str:
    site = _site(status)
    if site is None:
        return _("an unknown line")
    return short_location(Frame(file=site.file, line=site.line, function=site.function))
