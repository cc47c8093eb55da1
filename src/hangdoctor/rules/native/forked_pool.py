"""HD451 native.blocked: a process forked from a parent that ran a
native thread pool (OpenMP's, behind torch and numpy's parallel operations) sleeps on a futex
inside a native call. fork() copies only the thread that called it: the pool's worker threads
do not exist in the child, but the pool's state says they do, and its next parallel region
waits for them forever (GNU libgomp is not fork-safe)."""

from __future__ import annotations

from collections.abc import Iterable

from hangdoctor.analysis.forked_pools import ForkedPoolWait, forked_pool_wait
from hangdoctor.analysis.frames import short_location
from hangdoctor.analysis.job import JobView, thread_label
from hangdoctor.i18n import _
from hangdoctor.rules.base import Deferral, Rule
from hangdoctor.rules.confidence import Confidence
from hangdoctor.rules.finding import Finding
from hangdoctor.rules.helpers import at, culprit, kernel_words, main_thread
from hangdoctor.taxonomy import Category


class ForkedPool(Rule):
    """a forked child waits inside a native call for a thread pool that fork did not copy

    Fires when: a process forked (not exec'd) from a parent that runs native pool threads sleeps on
    a futex inside a native call of your code (a torch or numpy operation), alone in its process and
    unmoving: OpenMP's pool in the child waits for workers that do not exist

    Why: fork() copies only the thread that calls it. A parent that already ran torch's or numpy's
    parallel operations has a native thread pool (GNU OpenMP, MKL) whose state the child inherits
    without its worker threads; the child's first parallel operation waits for workers that do not
    exist, asleep on a futex forever (libgomp is not fork-safe).

    Instead: Start children with the `spawn` or `forkserver` start method
    (`multiprocessing.set_start_method("spawn")`, `DataLoader(...,
    multiprocessing_context="spawn")`); or do no parallel torch/numpy work before forking, or run
    the children single-threaded (`torch.set_num_threads(1)` as the child starts,
    `OMP_NUM_THREADS=1`).
    """

    id = "HD451"
    category = Category.NATIVE_BLOCKED
    reads = "capture"
    specificity = 70
    defers_to = (
        Deferral(
            frozenset({"HD209"}),
            why=(
                "the training's input waits for this child: HD209 names the same child as the "
                "worker that stalls the data pipeline, with the thread that waits for its batch"
            ),
            same_culprit=True,
        ),
    )

    def check(self, job: JobView) -> Iterable[Finding]:
        for process in job.processes:
            stuck = forked_pool_wait(job, process)
            if stuck is not None:
                yield self._finding(job, stuck)

    def _finding(self, job: JobView, stuck: ForkedPoolWait) -> Finding:
        process, thread, parent, pool, frame = (
            stuck.process,
            stuck.thread,
            stuck.parent,
            stuck.pool,
            stuck.frame,
        )
        where = short_location(frame)
        return self.finding(
            confidence=Confidence.FAIR,
            title=_(
                "{process} hangs inside the native call at {where}: it was forked from a "
                "process running a thread pool",
                process=job.describe_process(process.pid),
                where=where,
            ),
            explanation=_(
                "{process} was forked from {parent}, which runs {pool} native thread(s) with "
                "no Python stack: a thread pool (OpenMP's, behind PyTorch's and numpy's "
                "parallel operations, or MKL's). fork() copies only the thread that called "
                "it, so the child has none of the pool's workers while the pool's state says "
                "it has; the child's first parallel operation waits for them forever, asleep "
                "on a futex at {where}.",
                process=job.describe_process(process.pid),
                parent=job.describe_process(parent.pid),
                pool=pool,
                where=where,
            ),
            culprit=culprit(job, process, thread, frame),
            related=(culprit(job, parent, main_thread(parent)),),
            evidence=(
                _(
                    "{process}, {thread}: at {place}, asleep on a futex inside that native call "
                    "({kernel}), alone in its process, unmoving",
                    process=job.describe_process(process.pid),
                    thread=thread_label(thread),
                    place=at(frame),
                    kernel=kernel_words(thread),
                ),
                _(
                    "its parent {parent} runs {pool} native thread(s) "
                    "with no Python stack (a thread pool) and forked it",
                    parent=job.describe_process(parent.pid),
                    pool=pool,
                ),
            ),
            fixes=(
                _(
                    "Start the children with the spawn (or forkserver) start method: "
                    '`multiprocessing.set_start_method("spawn")`, '
                    '`DataLoader(..., multiprocessing_context="spawn")`; a fresh interpreter '
                    "builds its own pool."
                ),
                _(
                    "Or keep the parent from starting the pool before it forks (no parallel torch "
                    "or numpy work before the fork), or run the children's math single-threaded "
                    "(`torch.set_num_threads(1)` as the child starts, `OMP_NUM_THREADS=1`)."
                ),
                _(
                    "Run `hangdoctor dump PID --native` on the child to see the pool's frames "
                    "(gomp_team_barrier_wait, for GNU OpenMP)."
                ),
            ),
        )
