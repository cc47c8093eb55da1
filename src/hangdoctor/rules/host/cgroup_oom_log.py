"""HD302 host.memory_exhausted: Slurm's cgroup out-of-memory handler killed tasks of the job's
step: the step used more host memory than its allocation (`--mem`, `--mem-per-cpu`)."""

from __future__ import annotations

from collections.abc import Iterable

from hangdoctor.analysis.job import JobView
from hangdoctor.analysis.logs import LogKind, LogMatch
from hangdoctor.i18n import _
from hangdoctor.rules._log_rule import LogKindsRule
from hangdoctor.rules.confidence import Confidence
from hangdoctor.rules.finding import Finding
from hangdoctor.rules.log_helpers import cite, matches_of
from hangdoctor.taxonomy import Category


class CgroupOutOfMemory(LogKindsRule):
    """Slurm's cgroup OOM handler killed the job's tasks

    Fires when: slurmstepd's `Detected N oom_kill event(s) in StepId=...` (or the older `oom-kill
    event(s) in step ... cgroup`), with srun's `task N: Out Of Memory`

    Why: Slurm runs each job step in a cgroup limited to its allocation (`--mem`, `--mem-per-cpu`).
    When the step's processes use more, the cgroup's OOM handler kills them with SIGKILL: no Python
    traceback, only slurmstepd's `oom_kill event` line, and the other ranks of the job fail or hang
    waiting for them.

    Instead: Ask for more memory (`#SBATCH --mem=...` or `--mem-per-cpu=...`; `sacct -j JOBID
    --format=JobID,MaxRSS,ReqMem` shows what each step used), or use less: fewer DataLoader workers,
    memory-mapped data instead of a copy per worker, a smaller `prefetch_factor`.
    """

    id = "HD302"
    category = Category.HOST_MEMORY_EXHAUSTED
    specificity = 75
    kinds = (LogKind.CGROUP_OOM,)

    def explain(self, job: JobView, events: list[LogMatch]) -> Iterable[Finding]:
        tasks = matches_of(job, LogKind.CGROUP_OOM_TASK)
        step = events[0].fields.get("step") or events[0].fields.get("step2")
        on = (
            _(
                " (task {task} on {host})",
                task=tasks[0].fields["tasks"],
                host=tasks[0].fields["host"],
            )
            if tasks
            else ""
        )
        yield self.finding(
            confidence=Confidence.CERTAIN,
            title=_(
                "Slurm killed step {step} for exceeding its memory allocation{on}", step=step, on=on
            ),
            explanation=_(
                "The step's processes used more host memory than Slurm allocated to "
                "it, and the cgroup's OOM handler killed them (SIGKILL: no Python "
                "traceback is printed)."
            ),
            evidence=tuple(cite(events, limit=2) + cite(tasks, limit=2)),
            fixes=(
                _(
                    "Ask for more memory (`#SBATCH --mem=...` or `--mem-per-cpu`), or use less: "
                    "fewer DataLoader workers, no copy of the dataset per worker (memory-mapped "
                    "files), smaller prefetch_factor."
                ),
                _("`sacct -j JOBID --format=JobID,MaxRSS,ReqMem` shows how much each step used."),
            ),
        )
