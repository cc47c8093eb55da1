"""HD101 process.deadlock: Finds cycles in the wait-for graph of a process's threads."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from hangdoctor.analysis.frames import python_frames, short_file, short_location
from hangdoctor.analysis.job import JobView, thread_label
from hangdoctor.analysis.locks import Cycle, find_lock_cycles, lock_name
from hangdoctor.analysis.waitgraph import Sink, WaitGraph, build_wait_graph
from hangdoctor.evidence import build as b
from hangdoctor.evidence.model import (
    Bundle,
    Frame,
    JobRecord,
    ProcessEvidence,
    ThreadDeath,
    ThreadEvidence,
)
from hangdoctor.i18n import _
from hangdoctor.rules.base import Example, Rule
from hangdoctor.rules.confidence import Confidence
from hangdoctor.rules.finding import Finding, Severity
from hangdoctor.rules.helpers import at, culprit, kernel_words
from hangdoctor.taxonomy import Category


def _lock_order_deadlock() -> Bundle:
    # Two threads take the same two global locks in opposite orders.
    return b.bundle(
        b.process(
            100,
            b.thread(
                100,
                b.frame(
                    f"{b.STDLIB}/threading.py",
                    1112,
                    "Thread._wait_for_tstate_lock",
                    acquiring=("lock",),
                ),
                b.frame("bank.py", 30, "<module>", code="t1.join()"),
                name="MainThread",
                syscall="futex",
            ),
            b.thread(
                101,
                b.frame(
                    "bank.py",
                    12,
                    "move_a_to_b",
                    code="with accounts_b:",
                    held=[("accounts_a", 10)],
                    acquiring=("accounts_b",),
                ),
                name="Thread-1",
                syscall="futex",
            ),
            b.thread(
                102,
                b.frame(
                    "bank.py",
                    20,
                    "move_b_to_a",
                    code="with accounts_a:",
                    held=[("accounts_b", 18)],
                    acquiring=("accounts_a",),
                ),
                name="Thread-2",
                syscall="futex",
            ),
        )
    )


def _locks_passed_as_arguments() -> Bundle:
    # The same function called with its two lock arguments swapped: only addresses tell.
    a, b_ = ("<_thread.lock at 0x10>", 16), ("<_thread.lock at 0x20>", 32)
    return b.bundle(
        b.process(
            200,
            b.thread(
                201,
                b.frame(
                    "swap.py",
                    6,
                    "transfer",
                    code="with second:",
                    held=[("first", 4)],
                    acquiring=("second",),
                    local_vars={"first": a, "second": b_},
                ),
                syscall="futex",
            ),
            b.thread(
                202,
                b.frame(
                    "swap.py",
                    6,
                    "transfer",
                    code="with second:",
                    held=[("first", 4)],
                    acquiring=("second",),
                    local_vars={"first": b_, "second": a},
                ),
                syscall="futex",
            ),
        )
    )


def _self_deadlock() -> Bundle:
    # A non-reentrant lock taken again, one call deeper, by the thread that holds it.
    return b.bundle(
        b.process(
            300,
            b.thread(
                300,
                b.frame(
                    "cache.py",
                    22,
                    "Cache.evict",
                    code="with self.lock:",
                    acquiring=("self.lock",),
                    local_vars={"self": ("<Cache>", 7)},
                ),
                b.frame(
                    "cache.py",
                    15,
                    "Cache.put",
                    code="self.evict()",
                    held=[("self.lock", 13)],
                    local_vars={"self": ("<Cache>", 7)},
                ),
                name="MainThread",
                syscall="futex",
            ),
        )
    )


def _signal_handler_self_deadlock() -> Bundle:
    # A SIGALRM handler takes the metrics lock that the code it interrupted holds.
    handler = b.frame(
        "watchdog.py",
        52,
        "Watchdog._on_timeout",
        code="state = self.metrics.snapshot()",
        local_vars={"self": ("<Watchdog>", 3), "signum": ("14", None), "frame": ("<frame>", 4)},
    )
    handler = handler.model_copy(
        update={"locals": tuple(v.model_copy(update={"arg": True}) for v in handler.locals)}
    )
    return b.bundle(
        b.process(
            350,
            b.thread(
                350,
                b.frame(
                    "watchdog.py",
                    32,
                    "Metrics.snapshot",
                    code="with self.lock:",
                    acquiring=("self.lock",),
                    local_vars={"self": ("<Metrics>", 7)},
                ),
                handler,
                b.frame(
                    "train.py",
                    61,
                    "record",
                    code="stats = grad_stats(model)",
                    held=[("metrics.lock", 58)],
                    local_vars={"metrics": ("<Metrics>", 7)},
                ),
                name="MainThread",
                syscall="futex",
            ),
        )
    )


def _attribute_and_local_by_name() -> Bundle:
    # The checkpoint thread's `self.model_lock` is the main thread's local `model_lock`:
    # py-spy gives an address for the local, none for the attribute's value.
    return b.bundle(
        b.process(
            360,
            b.thread(
                360,
                b.frame(
                    "train.py",
                    65,
                    "main",
                    code="with model_lock:",
                    held=[("optim_lock", 61)],
                    acquiring=("model_lock",),
                    local_vars={
                        "model_lock": ("<_thread.lock>", 11),
                        "optim_lock": ("<_thread.lock>", 12),
                    },
                ),
                name="MainThread",
                syscall="futex",
            ),
            b.thread(
                361,
                b.frame(
                    "train.py",
                    38,
                    "Checkpointer.run",
                    code="with self.optim_lock:",
                    held=[("self.model_lock", 35)],
                    acquiring=("self.optim_lock",),
                    local_vars={"self": ("<Checkpointer>", 20)},
                ),
                name="checkpointer",
                syscall="futex",
            ),
        )
    )


def _inherited_through_fork() -> Bundle:
    # A forked child still shows the parent's frames below multiprocessing's fork call.
    return b.bundle(
        b.process(
            600,
            b.thread(
                600,
                b.frame(
                    "job.py", 9, "work", code="with registry_lock:", acquiring=("registry_lock",)
                ),
                b.frame(f"{b.STDLIB}/multiprocessing/process.py", 108, "BaseProcess.run"),
                b.frame(f"{b.STDLIB}/multiprocessing/popen_fork.py", 71, "Popen._launch"),
                b.frame(
                    "job.py", 20, "main", code="p.start()", held=[("registry_lock", 19, "acquire")]
                ),
                name="MainThread",
                syscall="futex",
            ),
        )
    )


def _acquired_then_taken_again(*, with_helper_thread: bool) -> Bundle:
    # `lock.acquire()` in save(), then a helper that does `with lock:`. Alone, the thread can
    # never be released; with another thread of the user's, that one might release it.
    main = b.thread(
        800,
        b.frame("log.py", 5, "log", code="with lock:", acquiring=("lock",)),
        b.frame("log.py", 9, "save", code='log("saving")', held=[("lock", 8, "acquire")]),
        name="MainThread",
        syscall="futex",
    )
    helper = b.thread(
        801, b.frame("log.py", 20, "flusher", code="event.wait()"), name="flusher", syscall="futex"
    )
    return b.bundle(b.process(800, main, *((helper,) if with_helper_thread else ())))


def _released_by_a_thread_that_died() -> Bundle:
    # `ready.acquire()` twice: the second waits for a worker meant to release it, which died
    # of an exception first (a lock used as a one-shot signal).
    main = b.thread(
        900,
        b.frame(
            "prep.py",
            31,
            "main",
            code="ready.acquire()",
            acquiring=("ready",),
            held=[("ready", 27, "acquire")],
        ),
        name="MainThread",
        syscall="futex",
    )
    died = ThreadDeath(
        pid=900,
        text=(
            "Exception in thread loader:\n"
            "Traceback (most recent call last):\n"
            '  File "prep.py", line 14, in load\n'
            '    raise KeyError("label")\n'
            "KeyError: 'label'"
        ),
    )
    job = b.bundle(b.process(900, main))
    record = JobRecord(started_at=0.0, hang_declared_s=20.0, thread_deaths=(died,))
    return job.model_copy(update={"job": record})


def _condition_wait() -> Bundle:
    # threading.Condition acquires its waiter twice on purpose: notify() releases it.
    return b.bundle(
        b.process(
            700,
            b.thread(
                701,
                b.frame(
                    f"{b.STDLIB}/threading.py",
                    327,
                    "Condition.wait",
                    code="waiter.acquire()",
                    acquiring=("waiter",),
                    held=[("waiter", 321, "acquire")],
                    local_vars={"waiter": ("<_thread.lock>", 5)},
                ),
                b.frame("q.py", 4, "consume", code="item = jobs.get()"),
                syscall="futex",
            ),
        )
    )


def _waiting_for_a_free_lock() -> Bundle:
    # One thread waits for a lock nobody holds any more (it will get it): no cycle.
    return b.bundle(
        b.process(
            400,
            b.thread(
                401,
                b.frame("w.py", 5, "work", code="with lock_b:", acquiring=("lock_b",)),
                syscall="futex",
            ),
            b.thread(
                402,
                b.frame("w.py", 9, "other", code="time.sleep(1)", held=[("lock_a", 8)]),
                syscall="clock_nanosleep",
            ),
        )
    )


def _same_code_different_objects() -> Bundle:
    # Same method, different `self`: each thread holds its own object's lock.
    return b.bundle(
        b.process(
            500,
            b.thread(
                501,
                b.frame(
                    "q.py",
                    9,
                    "Box.put",
                    code="with self.other.lock:",
                    held=[("self.lock", 8)],
                    acquiring=("self.other.lock",),
                    local_vars={"self": ("<Box>", 1)},
                ),
                syscall="futex",
            ),
            b.thread(
                502,
                b.frame(
                    "q.py",
                    30,
                    "Box.get",
                    code="time.sleep(5)",
                    held=[("self.lock", 28)],
                    local_vars={"self": ("<Box>", 2)},
                ),
                syscall="clock_nanosleep",
            ),
        )
    )


def _handoff_from_the_dead(graph: WaitGraph, process: ProcessEvidence, cycle: Cycle) -> bool:
    """A thread waiting for a plain lock it holds itself is no self-deadlock when the lock was
    to be released by another thread or process that died (the graph's sink is that death):
    the wait is a handoff that never came, and the death is the cause (HD115 names it)."""
    if len({wait.tid for wait in cycle.waits}) != 1:
        return False
    return graph.follow((process.pid, cycle.waits[0].tid)).sink is Sink.DEAD


class LockDeadlock(Rule):
    id = "HD101"
    category = Category.PROCESS_DEADLOCK
    summary = "threads wait for locks held by each other"
    fires_when = (
        "threads wait for locks held by each other (cycle in the wait-for graph); a "
        "non-reentrant lock taken twice; a lock inherited in its held state through `fork`"
    )
    why = (
        "Threads that take the same locks in different orders can each end up holding one lock "
        "while waiting for the other: none can continue, and nothing outside will ever release "
        "them. The same happens to a thread that takes a non-reentrant `threading.Lock` twice, to "
        "a signal handler that waits for a lock the code it interrupted holds, and to a forked "
        "child that got a lock in its held state. The job stops with no error and no CPU use."
    )
    instead = (
        "Take locks in one fixed order everywhere, or protect the shared state with a single lock; "
        "use `threading.RLock` where a thread may take the lock again, and "
        "`lock.acquire(timeout=...)` with a back-off where an order cannot be fixed. In a signal "
        "handler set a flag instead of locking; start child processes with the `spawn` start "
        'method (`multiprocessing.set_start_method("spawn")`).'
    )
    reads = "capture"
    specificity = 90
    fires_on = (
        Example("lock-order deadlock on globals", _lock_order_deadlock),
        Example("locks passed as swapped arguments", _locks_passed_as_arguments),
        Example("non-reentrant lock taken twice", _self_deadlock),
        Example(
            "a signal handler takes the lock the interrupted code holds",
            _signal_handler_self_deadlock,
        ),
        Example(
            "locks taken in opposite orders, one by attribute, one by local name",
            _attribute_and_local_by_name,
        ),
        Example("lock held by the parent when it forked", _inherited_through_fork),
        Example(
            "lock.acquire() then `with lock:` in a lone thread",
            lambda: _acquired_then_taken_again(with_helper_thread=False),
        ),
    )
    quiet_on = (
        Example("a lock that nobody holds", _waiting_for_a_free_lock),
        Example("same attribute on different objects", _same_code_different_objects),
        Example("threading.Condition waiting for notify()", _condition_wait),
        Example(
            "lock.acquire() then `with lock:` while another thread may release it",
            lambda: _acquired_then_taken_again(with_helper_thread=True),
        ),
        Example(
            "a lock taken twice, the second time for a thread that died before releasing it",
            _released_by_a_thread_that_died,
        ),
    )

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
        return Finding(
            id=self.id,
            category=self.category,
            severity=Severity.ERROR,
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
