"""Who holds which lock and who waits for it: a wait-for graph between the threads of a process.

A plain lock records no owner, so ownership is read from the code: a thread holds the locks
of the `with` blocks (and unreleased `acquire()` calls) that enclose the lines its frames are on.
An RLock records its owner, which the instrumented process says (`ThreadEvidence.owns`): it is
held by that thread even where no frame shows it taken.
A lock is identified by the object address py-spy reports for a local (`first`) or the process
named for an attribute (`self.lock`, `capture.object_identity`), else by its owner's address and
the attribute's name, or by module and name for a global.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from hangdoctor.analysis.frames import Origin, origin, python_frames, runs_user_code
from hangdoctor.evidence.model import Frame, ProcessEvidence, ThreadEvidence

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_WAITING_SYSCALLS = {"futex", None}

LockId = tuple[str, ...]


def lock_identity(expression: str, frame: Frame) -> tuple[LockId, bool]:
    """(identity, exact) of the lock `expression` evaluates to in `frame`.

    `exact` is True when the identity comes from an object address rather than from text.
    """
    named = next((a.addr for a in frame.attributes if a.name == expression), None)
    if named is not None:  # the process named the attribute's object (`capture.object_identity`)
        return ("object", str(named)), True
    root, _, rest = expression.partition(".")
    addresses = {v.name: v.addr for v in frame.locals if v.addr is not None}
    if _NAME.match(root) and root in addresses:
        if not rest:
            return ("object", str(addresses[root])), True
        return ("attribute", str(addresses[root]), rest), True
    local_names = {v.name for v in frame.locals}
    if _NAME.match(root) and root not in local_names:
        # Not a local: a module global (or a builtin), the same object in every thread.
        return ("global", frame.file, expression), False
    return ("text", frame.file, frame.function, expression), False


@dataclass(frozen=True)
class LockWait:
    """A thread blocked acquiring a lock."""

    tid: int
    expression: str
    lock: LockId
    frame: Frame
    exact: bool


@dataclass(frozen=True)
class LockHold:
    """A lock a thread holds, and where it took it."""

    tid: int
    expression: str
    lock: LockId
    frame: Frame
    line: int
    exact: bool
    with_block: bool
    inherited: bool = False  # taken by the parent before it forked this process
    owned: bool = False  # an RLock whose owner this thread is, as its process said

    @property
    def certain(self) -> bool:
        """A `with` block releases in the same thread, and only an RLock's owner may release
        it; a bare acquire() of a plain lock may be a signal that another thread releases
        (threading.Condition works that way)."""
        return self.with_block or self.inherited or self.owned


def lock_wait(thread: ThreadEvidence) -> LockWait | None:
    """The lock this thread is blocked acquiring, if its innermost Python line acquires one."""
    if thread.python is None:
        return None
    if thread.kernel is not None and (
        thread.kernel.state != "S" or thread.kernel.syscall_name not in _WAITING_SYSCALLS
    ):
        return None
    frames = python_frames(thread.python.frames)
    if (
        not frames
        or not frames[0].acquiring
        or condition_sleep(frames[0])
        or "/multiprocessing/" in frames[0].file.replace("\\", "/")
    ):
        return None  # multiprocessing's own semaphores are shared between processes
    innermost = frames[0]
    expression = innermost.acquiring[-1]
    lock, exact = lock_identity(expression, innermost)
    return LockWait(thread.tid, expression, lock, innermost, exact)


def condition_sleep(frame: Frame) -> bool:
    """threading's Condition.wait sleeps by acquiring a fresh `waiter` lock that only a
    notify releases: a wait on the condition (or the queue, event or semaphore built on it,
    which `thread_waits` names), not a lock that someone holds."""
    return (
        frame.file.replace("\\", "/").endswith("/threading.py")
        and frame.function.split(".")[-1] == "wait"
    )


def _forked_here(frame: Frame) -> bool:
    """multiprocessing's fork start method: frames outside this one ran in the parent."""
    return frame.file.replace("\\", "/").endswith("multiprocessing/popen_fork.py") and (
        frame.function.split(".")[-1] == "_launch"
    )


def lock_holds(thread: ThreadEvidence) -> list[LockHold]:
    """Every lock-like context this thread holds, innermost frames first; then the RLocks its
    process said it owns that no frame shows (taken by an `acquire()` in a function that has
    returned)."""
    if thread.python is None:
        return []
    holds = _held_in_frames(thread)
    shown = {hold.lock for hold in holds}
    frames = python_frames(thread.python.frames)
    here = next((f for f in frames if origin(f) is Origin.USER), frames[0] if frames else None)
    for owned in thread.owns:
        lock: LockId = ("object", str(owned.addr))
        if lock in shown or here is None:
            continue
        name = (
            _name_of(thread, owned.addr)
            or f"the {owned.kind.rsplit('.', 1)[-1]} at {owned.addr:#x}"
        )
        holds.append(LockHold(thread.tid, name, lock, here, here.line, True, False, owned=True))
    return holds


def _name_of(thread: ThreadEvidence, address: int) -> str | None:
    """What the thread's frames call the object at `address`, if they hold it."""
    for frame in thread.python.frames if thread.python else ():
        for variable in (*frame.attributes, *frame.locals):
            if variable.addr == address:
                return variable.name
    return None


def _held_in_frames(thread: ThreadEvidence) -> list[LockHold]:
    """The locks of the `with` blocks and unreleased acquire() calls around its frames."""
    assert thread.python is not None
    holds = []
    inherited = False
    for frame in python_frames(thread.python.frames):
        if _forked_here(frame):
            inherited = True
            continue
        stdlib = origin(frame) is Origin.STDLIB
        for held in frame.held:
            if held.how != "with" and stdlib and not inherited:
                continue  # the stdlib's own signalling (Condition, Semaphore, Event)
            lock, exact = lock_identity(held.expression, frame)
            holds.append(
                LockHold(
                    thread.tid,
                    held.expression,
                    lock,
                    frame,
                    held.line,
                    exact,
                    with_block=held.how == "with",
                    inherited=inherited,
                )
            )
    return holds


@dataclass(frozen=True)
class Cycle:
    """Threads each waiting for a lock the next one holds; the last waits for the first."""

    waits: tuple[LockWait, ...]
    holds: tuple[LockHold, ...]  # holds[i] is the lock waits[i] wants, held by the next thread
    by_name: bool = False  # linked by the locks' names, where their identities could not be

    @property
    def exact(self) -> bool:
        """Whether every link was matched by object address."""
        return (
            not self.by_name
            and all(w.exact for w in self.waits)
            and all(h.exact for h in self.holds)
        )

    @property
    def inherited(self) -> bool:
        """A thread waits for a lock that its process inherited, held, from a fork."""
        return any(h.inherited for h in self.holds)


def lock_name(expression: str) -> str:
    """The name a lock goes by in the code: `optim_lock` for `self.optim_lock` and for a local
    `optim_lock` alike."""
    return expression.rsplit(".", 1)[-1].strip()


def find_lock_cycles(process: ProcessEvidence) -> list[Cycle]:
    """Deadlock cycles among the threads of one process, each reported once.

    Locks are linked by identity first. Where that finds no cycle, two or more threads that each
    hold a lock by the name the next one waits for are linked by name: a thread's
    `self.model_lock` and the main thread's local `model_lock` are one object that py-spy shows
    no common address for (an attribute's value has none), and names that close a cycle by
    accident are unlikely."""
    cycles = _cycles(process, lambda wait: wait.lock, lambda hold: hold.lock)
    if cycles:
        return cycles
    named = _cycles(
        process,
        lambda wait: ("name", lock_name(wait.expression)),
        lambda hold: ("name", lock_name(hold.expression)),
        across_threads=True,
    )
    return [Cycle(c.waits, c.holds, by_name=True) for c in named if len(c.waits) >= 2]


def _cycles(
    process: ProcessEvidence,
    wanted: Callable[[LockWait], LockId],
    held_key: Callable[[LockHold], LockId],
    across_threads: bool = False,
) -> list[Cycle]:
    waits = {t.tid: w for t in process.threads if (w := lock_wait(t)) is not None}
    holders: dict[LockId, list[LockHold]] = {}
    for thread in process.threads:
        for held in lock_holds(thread):
            holders.setdefault(held_key(held), []).append(held)

    acting = {t.tid for t in process.threads if runs_user_code(t)}
    lonely = {t.tid for t in process.threads if not acting - {t.tid}}

    def next_hold(tid: int) -> LockHold | None:
        # A bare acquire() the waiting thread made itself may be a signal another thread will
        # release (threading.Condition works that way), unless no other thread could.
        wait = waits[tid]
        candidates = [
            hold
            for hold in holders.get(wanted(wait), [])
            if hold.tid != tid or (not across_threads and (hold.certain or tid in lonely))
        ]
        candidates.sort(key=lambda hold: not hold.exact)
        return next(iter(candidates), None)

    cycles: list[Cycle] = []
    seen: set[frozenset[int]] = set()
    for start in sorted(waits):
        path: list[int] = []
        current: int | None = start
        while current is not None and current in waits and current not in path:
            path.append(current)
            hold = next_hold(current)
            current = hold.tid if hold else None
        if current is None or current not in path:
            continue
        loop = path[path.index(current) :]
        key = frozenset(loop)
        if key in seen:
            continue
        seen.add(key)
        loop_waits = tuple(waits[tid] for tid in loop)
        loop_holds = tuple(next_hold(tid) for tid in loop)
        cycles.append(Cycle(loop_waits, tuple(h for h in loop_holds if h is not None)))
    return cycles
