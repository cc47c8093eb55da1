"""HD101 process.deadlock: Finds cycles in the wait-for graph of a process's threads."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from hangdoctor.analysis.frames import python_frames, short_file, short_location
from hangdoctor.analysis.job import JobView, thread_label
from hangdoctor.analysis.locks import Cycle, find_lock_cycles, lock_name
from hangdoctor.analysis.waitgraph import Sink, WaitGraph, build_wait_graph
from hangdoctor.evidence.model import (
    Frame,
    ProcessEvidence,
    ThreadEvidence,
)
from hangdoctor.i18n import _
from hangdoctor.rules.base import Rule
from hangdoctor.rules.confidence import Confidence
from hangdoctor.rules.finding import Finding
from hangdoctor.rules.helpers import at, culprit, kernel_words
from hangdoctor.taxonomy import Category


def _handoff_from_the_dead(graph: WaitGraph, process: ProcessEvidence, cycle: Cycle) -> bool:
    """A thread waiting for a plain lock it holds itself is no self-deadlock when the lock was
    to be released by another thread or process that died (the graph's sink is that death):
    the wait is a handoff that never came, and the death is the cause (HD115 names it)."""
    if len({wait.tid for wait in cycle.waits}) != 1:
        return False
    return graph.follow((process.pid, cycle.waits[0].tid)).sink is Sink.DEAD


class LockDeadlock(Rule):
    """threads wait for locks held by each other

    Fires when: threads wait for locks held by each other (cycle in the wait-for graph); a
    non-reentrant lock taken twice; a lock inherited in its held state through `fork`

    Why: Threads that take the same locks in different orders can each end up holding one lock while
    waiting for the other: none can continue, and nothing outside will ever release them. The same
    happens to a thread that takes a non-reentrant `threading.Lock` twice, to a signal handler that
    waits for a lock the code it interrupted holds, and to a forked child that got a lock in its
    held state. The job stops with no error and no CPU use.

    Instead: Take locks in one fixed order everywhere, or protect the shared state with a single
    lock; use `threading.RLock` where a thread may take the lock again, and
    `lock.acquire(timeout=...)` with a back-off where an order cannot be fixed. In a signal handler
    set a flag instead of locking; start child processes with the `spawn` start method
    (`multiprocessing.set_start_method("spawn")`).
    """

    id = "HD101"
    category = Category.PROCESS_DEADLOCK
    reads = "capture"
    specificity = 90

    def check(self, job: JobView) -> Iterable[Finding]:
        graph = build_wait_graph(job)
        for process in job.processes:
            threads = {t.tid: t for t in process.threads}
            for cycle in find_lock_cycles(process):
                if _handoff_from_the_dead(graph, process, cycle):
                    continue
                yield self._finding(job, process, threads, cycle)

    def _finding(
        self,
        job: JobView,
        process: ProcessEvidence,
        threads: dict[int, ThreadEvidence],
        cycle: Cycle,
    ) -> Finding:
        first = threads[cycle.waits[0].tid]
        lines = []
        for wait, hold in zip(cycle.waits, cycle.holds, strict=False):
            waiter = threads[wait.tid]
            own = [h for h in cycle.holds if h.tid == wait.tid]
            owned = (
                _(
                    " while holding {locks}",
                    locks=", ".join(
                        _(
                            "{lock} (taken at line {line})",
                            lock=_lock_words(h.expression, h.frame),
                            line=h.line,
                        )
                        for h in own
                    ),
                )
                if own
                else ""
            )
            lines.append(
                _(
                    "{waiter} waits for {lock} at {place}{owned}; {holder} holds it since "
                    "{file}:{line} ({kernel})",
                    waiter=thread_label(waiter),
                    lock=_lock_words(wait.expression, wait.frame),
                    place=at(wait.frame),
                    owned=owned,
                    holder=thread_label(threads[hold.tid]),
                    file=short_file(hold.frame.file),
                    line=hold.line,
                    kernel=kernel_words(waiter),
                )
            )
        deadlock = _Deadlock(job, process, threads, cycle, first)
        story = next(told for tell in _STORIES if (told := tell(deadlock)) is not None)
        lines += story.evidence
        if cycle.by_name:
            lines.append(
                _(
                    "the locks are matched by the names the code gives them ({names}): "
                    "py-spy shows no address for an attribute's value",
                    names=", ".join(f"`{lock_name(w.expression)}`" for w in cycle.waits),
                )
            )
        return self.finding(
            confidence=Confidence.STRONG
            if cycle.inherited
            else Confidence.PROVEN
            if cycle.exact
            else Confidence.STRONG,
            title=story.title,
            explanation=story.explanation,
            culprit=culprit(job, process, first, cycle.waits[0].frame),
            related=tuple(culprit(job, process, threads[w.tid], w.frame) for w in cycle.waits[1:]),
            evidence=tuple(lines),
            fixes=story.fixes,
        )


@dataclass(frozen=True)
class _Deadlock:
    """A lock cycle of one process, as the stories below read it."""

    job: JobView
    process: ProcessEvidence
    threads: dict[int, ThreadEvidence]
    cycle: Cycle
    #: The thread of the cycle's first wait, the finding's culprit.
    first: ThreadEvidence


@dataclass(frozen=True)
class _Story:
    """What the finding says about one shape of lock cycle."""

    title: str
    explanation: str
    fixes: tuple[str, ...]
    #: Said after the waits and holds of the cycle.
    evidence: tuple[str, ...] = ()


def _inherited(deadlock: _Deadlock) -> _Story | None:
    cycle, first = deadlock.cycle, deadlock.first
    if not cycle.inherited:
        return None
    wait, hold = cycle.waits[0], next(h for h in cycle.holds if h.inherited)
    return _Story(
        title=_(
            "Lock inherited in the held state through fork: {thread} waits for `{lock}` forever",
            thread=thread_label(first),
            lock=wait.expression,
        ),
        explanation=_(
            "`{lock}` was held (taken at {file}:{line} in {function}) when the parent forked "
            "{process}. The child got a copy of "
            "the lock in its held state, and no thread in the child will ever release it.",
            lock=hold.expression,
            file=short_file(hold.frame.file),
            line=hold.line,
            function=hold.frame.function,
            process=deadlock.job.describe_process(deadlock.process.pid),
        ),
        fixes=(
            _(
                "Start child processes with the 'spawn' or 'forkserver' method "
                "(multiprocessing.set_start_method, or DataLoader(multiprocessing_context="
                "'spawn')) so they do not inherit held locks."
            ),
            _(
                "Or do not hold `{lock}` while forking, or create the lock anew in "
                "the child (os.register_at_fork(after_in_child=...), or a DataLoader "
                "worker_init_fn).",
                lock=hold.expression,
            ),
        ),
    )


def _in_signal_handler(deadlock: _Deadlock) -> _Story | None:
    cycle = deadlock.cycle
    if len(cycle.waits) != 1 or (handler := _signal_handler(deadlock.first)) is None:
        return None
    wait, hold = cycle.waits[0], cycle.holds[0]
    return _Story(
        title=_(
            "Self-deadlock in a signal handler: {handler} waits for `{lock}` at {where}, "
            "which the code it interrupted holds (taken at line {line})",
            handler=handler.function,
            lock=wait.expression,
            where=short_location(wait.frame),
            line=hold.line,
        ),
        explanation=_(
            "Python runs a signal handler on the main thread, between two bytecodes of "
            "whatever it was doing: here inside the block that took `{lock}` "
            "(line {line}). The handler ({where}) then waits for "
            "that lock, which only the interrupted code, below it on the same stack, "
            "could release.",
            lock=hold.expression,
            line=hold.line,
            where=short_location(handler),
        ),
        fixes=(
            _(
                "Take no blocking lock in the handler {handler}: set a flag (or "
                "write to a pipe) and act on it in the main loop, or use "
                "`acquire(blocking=False)` and skip the work when the lock is taken.",
                handler=handler.function,
            ),
            _(
                "Or block the signal around the locked section "
                "(`signal.pthread_sigmask(SIG_BLOCK, ...)`)."
            ),
        ),
        evidence=(
            _(
                "{handler} at {place} is a signal handler (its "
                "arguments are the signal number and the interrupted frame)",
                handler=handler.function,
                place=at(handler),
            ),
        ),
    )


def _reentered(deadlock: _Deadlock) -> _Story | None:
    cycle = deadlock.cycle
    if len(cycle.waits) != 1:
        return None
    wait, hold = cycle.waits[0], cycle.holds[0]
    return _Story(
        title=_(
            "Self-deadlock: {thread} waits for `{lock}`, which it already holds",
            thread=thread_label(deadlock.first),
            lock=wait.expression,
        ),
        explanation=_(
            "`{lock}` was taken at line {line} and is acquired again at "
            "{place} by the same thread. A threading.Lock is not re-entrant, so "
            "the thread waits for itself forever.",
            lock=wait.expression,
            line=hold.line,
            place=at(wait.frame),
        ),
        fixes=(
            _(
                "Do not re-acquire `{lock}` at {where}: call an "
                "internal variant that assumes the lock is already held.",
                lock=wait.expression,
                where=short_location(wait.frame),
            ),
            _("Or make it a threading.RLock, which the holding thread may acquire again."),
        ),
    )


def _lock_order(deadlock: _Deadlock) -> _Story:
    cycle, threads = deadlock.cycle, deadlock.threads
    names = _(" and ").join(thread_label(threads[w.tid]) for w in cycle.waits)
    sites = {(w.frame.file, w.frame.line) for w in cycle.waits}
    if len(sites) == 1:
        order_fix = _(
            "Every thread runs the same code at {where}"
            ", which takes its locks in the order it was given them, and the threads "
            "pass them in different orders: take them in one global order there (for "
            "example sorted by id()), whatever order the caller used.",
            where=short_location(cycle.waits[0].frame),
        )
    else:
        order_fix = _(
            "Take these locks in one fixed order in every thread: {order}",
            order="; ".join(
                _(
                    "{thread} takes `{lock}` at {where} while holding another",
                    thread=thread_label(threads[w.tid]),
                    lock=w.expression,
                    where=short_location(w.frame),
                )
                for w in cycle.waits
            ),
        )
    return _Story(
        title=_("Deadlock: {names} wait for each other's locks", names=names),
        explanation=_(
            "{count} threads of {process}"
            " each hold a lock that the next one needs, so none can continue: they take the "
            "same locks in different orders.",
            count=len(cycle.waits),
            process=deadlock.job.describe_process(deadlock.process.pid),
        ),
        fixes=(
            order_fix,
            _("Or protect the shared state with a single lock."),
            _(
                "Or acquire with `lock.acquire(timeout=...)` and back off (release and retry) "
                "on failure."
            ),
        ),
    )


#: The shapes of lock cycle, most specific first: the first story that fits is told (the
#: last fits every cycle).
_STORIES: tuple[Callable[[_Deadlock], _Story | None], ...] = (
    _inherited,
    _in_signal_handler,
    _reentered,
    _lock_order,
)


def _lock_words(expression: str, frame: Frame) -> str:
    """`second` (<_thread.lock at 0x7f..>) when py-spy gave the local's value, else `second`."""
    local = next((v for v in frame.locals if v.name == expression and v.repr), None)
    return f"`{expression}` ({local.repr})" if local else f"`{expression}`"


_SIGNAL_ARGS = frozenset(
    {"signum", "sig", "signo", "signal_number", "sig_num", "signalnum", "_signum", "_sig"}
)


def _signal_handler(thread: ThreadEvidence) -> Frame | None:
    """The user frame on the thread's stack that is a signal handler: a function whose
    arguments are a signal number and the interrupted frame (`def handler(signum, frame)`)."""
    for frame in python_frames(thread.python.frames if thread.python else ()):
        args = {v.name for v in frame.locals if v.arg}
        if args & _SIGNAL_ARGS and any("frame" in name for name in args):
            return frame
    return None
