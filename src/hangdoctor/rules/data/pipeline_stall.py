"""HD201 data.pipeline_stall: Keys on the mechanism: a consumer inside DataLoader.__next__ that
waits, and a producer whose stack is inside the fetch of a batch (dataset or collate code) and
is not running."""

from __future__ import annotations

from collections.abc import Iterable

from hangdoctor.analysis.advice import wait_fixes
from hangdoctor.analysis.frames import blame_frame, in_function, short_file, short_location
from hangdoctor.analysis.frameworks import (
    dataloader_consumer,
    in_dataset_code,
)
from hangdoctor.analysis.job import JobView, thread_label
from hangdoctor.analysis.locks import LockHold, lock_holds, lock_wait
from hangdoctor.analysis.roles import Role
from hangdoctor.analysis.thread_waits import ManagerCall, manager_call
from hangdoctor.analysis.waitgraph import Sink, build_wait_graph
from hangdoctor.analysis.waits import Wait, WaitKind, describe_wait
from hangdoctor.evidence.model import ProcessEvidence, ThreadEvidence
from hangdoctor.i18n import N_, _
from hangdoctor.rules.base import Deferral, Rule
from hangdoctor.rules.confidence import Confidence
from hangdoctor.rules.finding import Finding
from hangdoctor.rules.helpers import at, culprit, frames_of, kernel_words, main_thread
from hangdoctor.taxonomy import Category


def _a_worker_waits_for_the_dead(job: JobView) -> bool:
    """Whether following the waits of a DataLoader worker's thread ends at a thread or process
    that died of an exception, whose line is the one to show (one that ended quietly left no
    line: the worker's own wait says more)."""
    graph = build_wait_graph(job)
    for party in graph.waits:
        if job.role(party[0]) is not Role.DATALOADER_WORKER:
            continue
        chain = graph.follow(party)
        death = graph.dead.get(chain.end)
        if chain.sink is Sink.DEAD and death is not None and death.raised is not None:
            return True
    return False


class DataPipelineStall(Rule):
    """the training loop waits for data that a blocked worker never delivers

    Fires when: the training loop waits for a batch while a DataLoader worker (or the in-process
    dataset) is blocked in dataset code; says what it is blocked on, including a lock copied held
    through fork

    Why: A DataLoader waits for its next batch forever by default (`timeout=0`). When the code that
    produces batches (the dataset's `__getitem__`/`__iter__` or `collate_fn`, in a worker or in the
    main process) blocks on a read without a timeout, a lock copied held through fork, a thread pool
    or a Manager that does not answer, the training loop stops in `next()` with no error and the
    GPUs sit idle.

    Instead: Give every network and storage read in the dataset a timeout and a retry; set
    `DataLoader(timeout=120)` so a stuck worker raises in the training loop instead of hanging it;
    start workers with `DataLoader(..., multiprocessing_context="spawn")` when the parent runs
    threads or holds locks; debug the dataset with `num_workers=0`.
    """

    id = "HD201"
    category = Category.DATA_PIPELINE_STALL
    reads = "capture"
    specificity = 85
    defers_to = (
        Deferral(
            frozenset({"HD115"}),
            why=(
                "the blocked worker waits for a provider that died: HD115 names the death, "
                "which is the cause, where this rule would name the worker's wait, its symptom"
            ),
            when=_a_worker_waits_for_the_dead,
        ),
    )

    def check(self, job: JobView) -> Iterable[Finding]:
        for process in job.processes:
            for thread in process.threads:
                frames = frames_of(thread)
                consumer_frame = dataloader_consumer(frames)
                if consumer_frame is None:
                    continue
                consumer_wait = describe_wait(job, process, thread)
                if consumer_wait.kind is WaitKind.RUNNING:
                    continue
                if in_dataset_code(frames):
                    yield self._finding(job, process, thread, process, thread, consumer_wait, [])
                    continue
                blocked = []
                for worker in job.children(process.pid):
                    if job.role(worker.pid) is not Role.DATALOADER_WORKER:
                        continue
                    worker_main = main_thread(worker)
                    if worker_main is None or not in_dataset_code(frames_of(worker_main)):
                        continue
                    wait = describe_wait(job, worker, worker_main)
                    if wait.kind is not WaitKind.RUNNING:
                        blocked.append((worker, worker_main, wait))
                if blocked:
                    worker, worker_main, wait = blocked[0]
                    yield self._finding(
                        job, process, thread, worker, worker_main, wait, blocked[1:]
                    )

    def _finding(
        self,
        job: JobView,
        consumer: ProcessEvidence,
        consumer_thread: ThreadEvidence,
        producer: ProcessEvidence,
        producer_thread: ThreadEvidence,
        wait: Wait,
        others: list[tuple[ProcessEvidence, ThreadEvidence, Wait]],
    ) -> Finding:
        consumer_at = blame_frame(frames_of(consumer_thread))
        producer_at = blame_frame(frames_of(producer_thread))
        where = short_location(producer_at) if producer_at else _("the dataset code")
        in_process = producer is consumer
        workers = [
            w for w in job.children(consumer.pid) if job.role(w.pid) is Role.DATALOADER_WORKER
        ]
        who = (
            _("the dataset code in {process}", process=job.describe_process(consumer.pid))
            if in_process
            else job.describe_process(producer.pid)
        )
        evidence = [
            _(
                "{thread} of {process} waits for the next batch at {place}",
                thread=thread_label(consumer_thread),
                process=job.describe_process(consumer.pid),
                place=at(consumer_at),
            ),
            _(
                "{who} is {wait} at {place} ({kernel})",
                who=who,
                wait=wait.summary,
                place=at(producer_at),
                kernel=kernel_words(producer_thread),
            ),
        ]
        if workers:
            evidence.append(
                _(
                    "{workers} DataLoader worker(s); {blocked} blocked in dataset code",
                    workers=len(workers),
                    blocked=1 + len(others),
                )
            )
        inherited = _inherited_lock(producer_thread)
        if inherited is not None:
            evidence.append(
                _(
                    "`{lock}` was held at {file}:{line} in {function} when this process was "
                    "forked: its copy of the lock stays held forever",
                    lock=inherited.expression,
                    file=short_file(inherited.frame.file),
                    line=inherited.line,
                    function=inherited.frame.function,
                )
            )
        manager = manager_call(job, producer_thread)
        if manager is not None:
            evidence.append(manager.words)
        for other, _thread, other_wait in others[:4]:
            evidence.append(
                _(
                    "also blocked: {process}, {wait}",
                    process=job.describe_process(other.pid),
                    wait=other_wait.summary,
                )
            )
        return self.finding(
            confidence=Confidence.CERTAIN,
            title=_("Data pipeline stall: {who} is blocked in {where}", who=who, where=where),
            explanation=_(
                "The training loop waits for its next batch, and the code that produces it "
                "(the dataset's __getitem__/__iter__ or collate_fn) is {wait}. "
                "The DataLoader waits for it forever by default (timeout=0).",
                wait=wait.summary,
            ),
            culprit=culprit(job, producer, producer_thread),
            related=tuple(culprit(job, p, t) for p, t, _wait in others),
            evidence=tuple(evidence),
            fixes=(
                _manager_fixes(manager, where)
                if manager is not None
                else _executor_fixes(where)
                if not in_process and _waits_for_future(producer_thread)
                else _fixes(wait, where, in_process, inherited is not None)
            ),
        )


def _inherited_lock(thread: ThreadEvidence) -> LockHold | None:
    """The held-at-fork lock this thread waits for, if that is what it waits for."""
    wait = lock_wait(thread)
    if wait is None:
        return None
    return next((h for h in lock_holds(thread) if h.inherited and h.lock == wait.lock), None)


def _waits_for_future(thread: ThreadEvidence) -> bool:
    """Waiting for a concurrent.futures Future (`executor.submit(...).result()`)."""
    return in_function(frames_of(thread), "concurrent/futures/_base.py", {"result", "wait"})


def _executor_fixes(where: str) -> tuple[str, ...]:
    return (
        _(
            "The worker waits at {where} for a Future of a thread pool: an executor created "
            "before the DataLoader forked its workers is copied without its threads, so nothing "
            "in the worker runs what is submitted. Create the executor inside the worker "
            "(worker_init_fn, or lazily in __getitem__ keyed by os.getpid()), or do the work "
            "inline.",
            where=where,
        ),
        _("Or start the workers with DataLoader(multiprocessing_context='spawn' or 'forkserver')."),
        _(_TIMEOUT_FIX),
    )


_TIMEOUT_FIX = N_(
    "Set DataLoader(timeout=120) so a stuck worker raises an error in the training loop "
    "instead of hanging it."
)


def _manager_fixes(manager: ManagerCall, where: str) -> tuple[str, ...]:
    return (
        _(
            "The dataset waits at {where} for a multiprocessing Manager's server to answer "
            "{proxy}: find what holds the manager-side object (a Manager lock held by a "
            "process that was terminated or died is never released), and never `terminate()` a "
            "process that may hold one.",
            where=where,
            proxy=manager.proxy,
        ),
        _(
            "Give the call a timeout (`lock.acquire(timeout=...)`), or keep such state per "
            "worker (worker_init_fn) instead of in a Manager shared by every worker."
        ),
        _(_TIMEOUT_FIX),
    )


def _fixes(wait: Wait, where: str, in_process: bool, inherited: bool) -> tuple[str, ...]:
    specific: list[str] = []
    if inherited:
        specific.append(
            _(
                "The worker waits for a lock it inherited in the held state when the DataLoader "
                "forked it: use DataLoader(multiprocessing_context='spawn' or 'forkserver'), or "
                "create the lock inside the worker (worker_init_fn), or do not hold it while the "
                "loader starts its workers (creating the iterator)."
            )
        )
    elif wait.kind in (WaitKind.LOCK, WaitKind.FUTEX) and not in_process:
        specific.append(
            _(
                "The dataset waits on a lock at {where}. A lock created before the DataLoader "
                "forked its workers is copied in whatever state it had: create it inside the "
                "worker (worker_init_fn or lazily in __getitem__), or use "
                "DataLoader(multiprocessing_context='spawn' or 'forkserver').",
                where=where,
            )
        )
    else:
        specific.extend(wait_fixes(wait, where))
    if not in_process:
        specific.append(_(_TIMEOUT_FIX))
    specific.append(
        _("Reproduce with num_workers=0 to debug the dataset code in the main process.")
    )
    return tuple(specific)
