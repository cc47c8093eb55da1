"""HD209 data.pipeline_stall: the training's input waits for a worker process that was forked
from a parent running a native thread pool and now sleeps in that pool's next parallel region
(analysis/forked_pools.py): the worker will never deliver, and the input is what stops."""

from __future__ import annotations

from collections.abc import Iterable

from hangdoctor.analysis.forked_pools import ForkedPoolWait, forked_pool_wait
from hangdoctor.analysis.frames import blame_frame, short_location
from hangdoctor.analysis.job import JobView, thread_label
from hangdoctor.analysis.roles import Role
from hangdoctor.analysis.sink_category import on_data_path
from hangdoctor.analysis.waitgraph import Party, build_wait_graph
from hangdoctor.evidence.model import ThreadEvidence
from hangdoctor.i18n import _
from hangdoctor.rules.base import Rule
from hangdoctor.rules.confidence import Confidence
from hangdoctor.rules.finding import Finding
from hangdoctor.rules.helpers import at, culprit, frames_of, kernel_words
from hangdoctor.taxonomy import Category


def _input_waiter(job: JobView, worker: Party) -> tuple[Party, ThreadEvidence] | None:
    """A thread on the training's input path that waits for the worker (a DataLoader's
    consumer, a tf.data generator collecting a pool's results, a prefetching iterator)."""
    graph = build_wait_graph(job)
    for party, edges in graph.edges.items():
        thread = job.thread(*party)
        if thread is None or all(edge.waited != worker for edge in edges):
            continue
        if on_data_path(thread) or job.role(worker[0]) is Role.DATALOADER_WORKER:
            return party, thread
    return None


class ForkedInputWorker(Rule):
    """the training's input waits for a worker forked from a process whose native thread pool
    fork did not copy

    Fires when: a thread of the input pipeline (a DataLoader, a tf.data generator or Keras
    `PyDataset` collecting a process pool's results, an iterator the loop reads) waits for a worker
    process forked from a parent that runs native pool threads, and the worker sleeps on a futex
    inside a native call of its task (a TensorFlow, JAX, torch or numpy operation), unmoving,
    with nothing else of its own running

    Why: fork() copies only the thread that calls it. A parent that already ran TensorFlow, JAX,
    torch or numpy has the thread pools of their runtimes (Eigen's and tf.data's, XLA's, OpenMP's,
    MKL's), and a forked child inherits their state without their threads: its first operation that
    hands work to the pool waits for threads that do not exist. The pipeline then never gets the
    batch, and the training loop waits for it without an error.

    Instead: Start the workers with the spawn start method
    (`multiprocessing.get_context("spawn").Pool(...)`, `DataLoader(...,
    multiprocessing_context="spawn")`), or use threads for workers that call the framework (Keras
    `PyDataset(workers=N, use_multiprocessing=False)`); keep framework operations out of forked
    workers (decode and augment with numpy or PIL there, and convert to tensors in the parent).
    """

    id = "HD209"
    category = Category.DATA_PIPELINE_STALL
    reads = "capture"
    specificity = 75

    def check(self, job: JobView) -> Iterable[Finding]:
        for process in job.processes:
            stuck = forked_pool_wait(job, process)
            if stuck is None:
                continue
            waiter = _input_waiter(job, (process.pid, stuck.thread.tid))
            if waiter is not None:
                yield self._finding(job, stuck, waiter)

    def _finding(
        self, job: JobView, stuck: ForkedPoolWait, waiter: tuple[Party, ThreadEvidence]
    ) -> Finding:
        (pid, _tid), waiting = waiter
        consumer = job.process(pid)
        where = short_location(stuck.frame)
        waits_at = blame_frame(frames_of(waiting))
        worker = job.describe_process(stuck.process.pid)
        related = (culprit(job, consumer, waiting),) if consumer is not None else ()
        return self.finding(
            confidence=Confidence.FAIR,
            title=_(
                "Data pipeline stall: {worker} hangs inside the native call at {where}; it "
                "was forked from a process running a thread pool",
                worker=worker,
                where=where,
            ),
            explanation=_(
                "The input pipeline waits for {worker}, which was forked from {parent}. The "
                "parent runs {pool} native thread(s) with no Python stack: the thread pools of "
                "its framework's runtime. fork() copies only the thread that called it, so the "
                "worker inherited the pools' state without their threads, and the operation "
                "at {where} waits for them forever, asleep on a futex. The batch it was making "
                "never comes.",
                worker=worker,
                parent=job.describe_process(stuck.parent.pid),
                pool=stuck.pool,
                where=where,
            ),
            culprit=culprit(job, stuck.process, stuck.thread, stuck.frame),
            related=related,
            evidence=(
                _(
                    "{thread} of {process} waits for {worker} at {place}",
                    thread=thread_label(waiting),
                    process=job.describe_process(pid),
                    worker=worker,
                    place=at(waits_at) if waits_at else _("the input pipeline"),
                ),
                _(
                    "{worker}, {thread}: at {place}, asleep on a futex inside that native call "
                    "({kernel}), unmoving, nothing else of its own running",
                    worker=worker,
                    thread=thread_label(stuck.thread),
                    place=at(stuck.frame),
                    kernel=kernel_words(stuck.thread),
                ),
                _(
                    "its parent {parent} runs {pool} native thread(s) with no Python stack (a "
                    "thread pool) and forked it",
                    parent=job.describe_process(stuck.parent.pid),
                    pool=stuck.pool,
                ),
            ),
            fixes=(
                _(
                    "Start the workers with the spawn start method: "
                    '`multiprocessing.get_context("spawn").Pool(...)`, '
                    '`DataLoader(..., multiprocessing_context="spawn")`; a fresh interpreter '
                    "builds its own thread pools."
                ),
                _(
                    "Or keep framework operations out of forked workers: decode and augment with "
                    "numpy or PIL there and make tensors in the parent; for Keras's `PyDataset`, "
                    "use threads (`use_multiprocessing=False`)."
                ),
                _(
                    "Run `hangdoctor dump PID --native` on the worker to see the pool's frames "
                    "it waits in."
                ),
            ),
        )
