"""Who waits for whom: the job's wait-for graph, built from one capture.

Every thread of every process is a party. Each wait becomes edges to the parties that could
end it (a lock's holder, a child process, a pipe's other end, a joined thread, the threads that
could put into a queue or set an event, a manager's server, the GIL's holder, a peer process on
a loopback socket, a DataLoader's workers), or a note that something outside the job could end
it (a remote host, the terminal, the device, time), or that nothing could. Following the edges
from a waiting thread ends at a sink (a party that waits for no one in the job) or closes a
cycle: that is who everyone waits for, whatever the mechanism is called. Java's thread dumps and
Go's runtime find deadlocks the same way; rules name the mechanism at the sink, and the fallback
explains the sink when no rule does.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum

from hangdoctor.analysis.deaths import Death, exited_children, process_deaths, thread_deaths
from hangdoctor.analysis.device import device_wait, process_uses_gpu
from hangdoctor.analysis.frames import (
    Origin,
    in_function,
    innermost_user_frame,
    origin,
    python_frames,
    runs_python_of_its_own,
    short_file,
)
from hangdoctor.analysis.job import JobView
from hangdoctor.analysis.locks import lock_holds, lock_wait
from hangdoctor.analysis.rank_runs import as_rank
from hangdoctor.analysis.ranks import RankState, rank_view
from hangdoctor.analysis.roles import Role
from hangdoctor.analysis.tf_steps import runs_pipeline_python, waits_in_tf_runtime
from hangdoctor.analysis.thread_waits import (
    Primitive,
    at_exit,
    blocking_call,
    joined_thread,
    manager_call,
    serves_for_a_proxy,
    shared_call,
    thread_object,
    waits_for_end_of,
    waits_for_own_caller,
    waits_with_timeout,
)
from hangdoctor.analysis.waits import Wait, WaitKind, describe_wait, locked_file, opening_fifo
from hangdoctor.evidence.model import Frame, ProcessEvidence, ThreadEvidence
from hangdoctor.i18n import _

Party = tuple[int, int]  # (pid, tid)


class Sink(str, Enum):
    """Why a chain of waits stops at a party."""

    RUNNING = "running"  # it is on a CPU: computing, or spinning
    OUTSIDE = "outside"  # only something outside the job can end its wait
    NOBODY = "nobody"  # nothing in the job, and nothing outside it, can end its wait
    UNKNOWN = "unknown"  # the evidence does not say what would end it
    MAYBE = "maybe"  # only threads that might act later could end it
    CYCLE = "cycle"  # the chain came back to a party already on it
    DEAD = "dead"  # only a thread or process that died could have ended its wait


@dataclass(frozen=True)
class Edge:
    """`waiter` can go on only once `waited` acts."""

    waiter: Party
    waited: Party
    why: str  # "holds the lock", "is the child it waits for", ...
    #: False for a thread that merely could end the wait (any thread of the process could
    #: put into a queue): followed only when nothing surer is known.
    certain: bool = True
    #: False where the waited party may yet act on its own in time (a rank not yet at the
    #: collective): the edge explains a wait but proves no hang (`analysis.proof`).
    lasting: bool = True


@dataclass(frozen=True)
class Chain:
    """The waits followed from one party to where they stop."""

    parties: tuple[Party, ...]
    edges: tuple[Edge, ...]
    sink: Sink
    reason: str  # why nothing (or only what) can end the last party's wait

    @property
    def end(self) -> Party:
        """The party everyone on the chain waits for (for a cycle: the one that closed it)."""
        return self.parties[-1]


@dataclass
class WaitGraph:
    """The job's parties, their waits, and who could end each."""

    waits: dict[Party, Wait] = field(default_factory=dict)
    edges: dict[Party, list[Edge]] = field(default_factory=dict)
    #: Parties whose wait only something outside the job can end, and what.
    outside: dict[Party, str] = field(default_factory=dict)
    #: Parties whose wait nothing could end, and why.
    nobody: dict[Party, str] = field(default_factory=dict)
    #: Parties in `nobody` because no other thread of their process is left (one may have died).
    no_waker_left: set[Party] = field(default_factory=set)
    #: Parties whose wait only a thread or process that died would have ended, and that death.
    dead: dict[Party, Death] = field(default_factory=dict)
    #: Parties whose wait a process outside the job could still end (anyone on the host may
    #: open a FIFO by its path), or that are linked to a death only for want of a better
    #: explanation: no proof of a hang.
    unprovable: set[Party] = field(default_factory=set)
    #: Parties in `dead` whose dead provider was a DataLoader worker of theirs.
    dead_loader_workers: set[Party] = field(default_factory=set)

    def add(
        self,
        waiter: Party,
        waited: Party,
        why: str,
        *,
        certain: bool = True,
        lasting: bool = True,
    ) -> None:
        """One edge (self-edges are dropped: a thread does not wake itself)."""
        if waiter != waited:
            self.edges.setdefault(waiter, []).append(Edge(waiter, waited, why, certain, lasting))

    def follow(self, start: Party, limit: int = 16) -> Chain:
        """The chain of waits from `start`: each hop takes the first party that could end the
        wait, until a sink or a cycle."""
        parties = [start]
        edges: list[Edge] = []
        for _hop in range(limit):
            here = parties[-1]
            out = [e for e in self.edges.get(here, []) if e.certain]
            if not out:
                return Chain(tuple(parties), tuple(edges), *self._sink(here))
            edge = next((e for e in out if e.waited not in parties), out[0])
            edges.append(edge)
            if edge.waited in parties:
                return Chain(
                    tuple(parties),
                    tuple(edges),
                    Sink.CYCLE,
                    _(
                        "each waits for the next, and the last for the first: none of them can "
                        "go on"
                    ),
                )
            parties.append(edge.waited)
        return Chain(tuple(parties), tuple(edges), Sink.UNKNOWN, _("the chain is too long"))

    def _sink(self, party: Party) -> tuple[Sink, str]:
        wait = self.waits.get(party)
        if party in self.dead:
            return Sink.DEAD, _("the one that would have ended it is gone")
        if party in self.nobody:
            return Sink.NOBODY, self.nobody[party]
        if party in self.outside:
            return Sink.OUTSIDE, self.outside[party]
        if wait is not None and wait.kind is WaitKind.RUNNING:
            return Sink.RUNNING, _("it is running on a CPU")
        maybe = [e for e in self.edges.get(party, []) if not e.certain]
        if maybe:
            return Sink.MAYBE, _(
                "only another thread could end it ({why}), and none of those that could is "
                "doing so now",
                why=maybe[0].why,
            )
        return Sink.UNKNOWN, _("the capture does not show what would end this wait")


def _user_threads(process: ProcessEvidence, but: ThreadEvidence) -> list[ThreadEvidence]:
    return [t for t in process.threads if t.tid != but.tid and runs_python_of_its_own(t)]


def _wakers(process: ProcessEvidence, thread: ThreadEvidence) -> list[ThreadEvidence]:
    """The other threads of its process that could end `thread`'s wait: those running Python
    of their own that do not themselves wait for it to end, nor idle as a library's helper."""
    return [
        t
        for t in _user_threads(process, thread)
        if not waits_for_end_of(t, thread) and not _idle_helper(t)
    ]


#: Where a thread waits on an object of its own process (a lock, condition, event, queue).
_IN_PROCESS = ("/threading.py", "/queue.py")


def _idle_helper(thread: ThreadEvidence) -> bool:
    """A library's helper thread (no frame of the user's code) asleep on an object of its own
    process without a timeout (a multiprocessing queue's feeder waiting for items to send): it
    acts only when a thread of the job hands it work, never on its own. One waiting on I/O or
    with a timeout (a server's loop, a timer) may act on its own, and stays a possible waker."""
    frames = python_frames(thread.python.frames if thread.python else ())
    return (
        bool(frames)
        and innermost_user_frame(frames) is None
        and thread.kernel is not None
        and thread.kernel.state == "S"
        and frames[0].file.replace("\\", "/").endswith(_IN_PROCESS)
        and not waits_with_timeout(thread)
    )


def _runs_user_code(thread: ThreadEvidence) -> bool:
    return (
        runs_python_of_its_own(thread)
        and innermost_user_frame(thread.python.frames if thread.python else ()) is not None
    )


def _users_elsewhere(job: JobView, pid: int) -> list[Party]:
    """The threads running the user's code in the job's other processes (not those outside
    the job's tree): any of them could act on an object the processes share."""
    return [
        (other.pid, thread.tid)
        for other in job.processes
        if other.pid != pid and not other.outside_job
        for thread in other.threads
        if _runs_user_code(thread)
    ]


def _main(process: ProcessEvidence) -> ThreadEvidence | None:
    return next(
        (t for t in process.threads if t.tid == process.pid),
        process.threads[0] if process.threads else None,
    )


def _process_parties(process: ProcessEvidence) -> list[Party]:
    """Who in a process could act for it: its threads running the user's code (a library's
    helper, such as a multiprocessing queue's feeder thread, acts only for them), else its
    threads running Python of their own, else its main thread."""
    threads = [t for t in process.threads if _runs_user_code(t)]
    if not threads:
        threads = [t for t in process.threads if runs_python_of_its_own(t)]
    if not threads and (main := _main(process)) is not None:
        threads = [main]
    return [(process.pid, t.tid) for t in threads]


def _loopback_peer(job: JobView, remote: str) -> ProcessEvidence | None:
    """The captured process that owns the local end `remote` (a peer on this host)."""
    for process in job.processes:
        for opened in process.open_files:
            if opened.target.startswith("socket:"):
                endpoint = job.socket(opened.target)
                if endpoint is not None and endpoint.local == remote:
                    return process
    return None


@dataclass(frozen=True)
class _Waiter:
    """A thread that waits, as the edge finders see it."""

    job: JobView
    graph: WaitGraph
    process: ProcessEvidence
    thread: ThreadEvidence
    wait: Wait

    @property
    def me(self) -> Party:
        return (self.process.pid, self.thread.tid)


def _thread_edges(
    job: JobView, graph: WaitGraph, process: ProcessEvidence, thread: ThreadEvidence
) -> None:
    """The edges from one thread: the first finder that knows its wait draws them."""
    wait = describe_wait(job, process, thread)
    graph.waits[(process.pid, thread.tid)] = wait
    if wait.kind is WaitKind.RUNNING:
        return
    waiter = _Waiter(job, graph, process, thread, wait)
    for edges in _EDGE_FINDERS:
        if edges(waiter):
            return


def _waits_for_itself(w: _Waiter) -> bool:
    own = waits_for_own_caller(w.thread)
    if own is None:
        return False
    w.graph.nobody[w.me] = _(
        "it waits in {inner}() for {outer}() on the same object to return, and "
        "{outer}() is further up its own stack: it waits for itself",
        inner=own.waiting.function.rsplit(".", 1)[-1],
        outer=own.outer.function.rsplit(".", 1)[-1],
    )
    return True


def _joins_a_thread(w: _Waiter) -> bool:
    joined = joined_thread(w.thread)
    if joined is None:
        return False
    target = next((t for t in w.process.threads if thread_object(t) == joined), None)
    if target is None:
        return False
    w.graph.add(w.me, (w.process.pid, target.tid), _("is the thread it joins"))
    return True


def _exit_waits(w: _Waiter) -> bool:
    if not at_exit(w.thread):
        return False
    for other in _user_threads(w.process, w.thread):
        w.graph.add(
            w.me,
            (w.process.pid, other.tid),
            _("is a non-daemon thread the interpreter's exit waits for"),
        )
    return True


def _lock_edges(w: _Waiter) -> bool:
    """A lock's holders; or nobody, when it holds the lock itself or no releaser is left. A
    lock nobody holds in its code falls through to the other finders."""
    locked = lock_wait(w.thread)
    if locked is None:
        return False
    graph, me, process, thread = w.graph, w.me, w.process, w.thread
    holders = [
        t
        for t in process.threads
        if t.tid != thread.tid and any(h.lock == locked.lock for h in lock_holds(t))
    ]
    for holder in holders:
        graph.add(me, (process.pid, holder.tid), _("holds {lock}", lock=locked.expression))
    if not holders and any(h.lock == locked.lock for h in lock_holds(thread)):
        graph.nobody[me] = _(
            "it already holds {lock} itself, and the lock is not reentrant",
            lock=locked.expression,
        )
        # A plain lock may be released by any thread (a multiprocessing one by any process): one
        # taken to be released by another that then died is a handoff that never came, so a
        # death in the job may be what it waits for.
        graph.no_waker_left.add(me)
    if holders or me in graph.nobody:
        return True
    if not _no_releaser_left(w.job, process, thread):
        return False
    graph.no_waker_left.add(me)
    graph.nobody[me] = _(
        "no thread holds {lock} in its code, and no other thread or process is left "
        "that could release it: whoever took it ended without releasing it",
        lock=locked.expression,
    )
    return True


def _shared_object_edges(w: _Waiter) -> bool:
    shared = shared_call(w.thread)
    if shared is None:
        return False
    _shared_edges(w.job, w.graph, w.me, shared[0])
    return True


def _primitive_edges(w: _Waiter) -> bool:
    """A queue, event or condition of its own process: the threads that could end the wait,
    those that hold the very object first; nobody when none is left."""
    primitive = blocking_call(w.thread)
    if primitive is None:
        return False
    waited = _self_address(primitive[1])
    served = serves_a_call(w.thread)
    candidates = (
        [t for t in w.process.threads if t.tid != w.thread.tid and serves_a_call(t)]
        if served
        else _wakers(w.process, w.thread)
    )
    holding = {t.tid: _held_as(t, waited) for t in candidates}
    # Those that hold the very object first: a queue's producers before the bystanders.
    wakers = sorted(candidates, key=lambda t: holding[t.tid] is None)
    for waker in wakers:
        name = holding[waker.tid]
        w.graph.add(
            w.me,
            (w.process.pid, waker.tid),
            _("could {action}", action=primitive[0].waker)
            if name is None
            else _(
                "could {action}: it holds the same object, as {name}",
                action=primitive[0].waker,
                name=name,
            ),
            certain=False,
        )
    if not wakers:
        w.graph.no_waker_left.add(w.me)
        w.graph.nobody[w.me] = (
            _(
                "the Manager's server waits in {call} for its client without a timeout, and "
                "no other client is in a call that could {action}",
                call=primitive[0].what,
                action=primitive[0].waker,
            )
            if served
            else _(
                "it waits in {call} without a timeout, and no other thread of its process is "
                "left that could {action}",
                call=primitive[0].what,
                action=primitive[0].waker,
            )
        )
    return True


#: Where a thread waits for a process pool's result (`Pool.map`, `apply_async(...).get()`,
#: `imap`'s next item; `ProcessPoolExecutor`'s futures), and where that pool's worker
#: processes run a task: the loop each worker runs, and the call in it that takes the next task.
_POOL_RESULTS = (
    ("multiprocessing/pool.py", {"get", "wait", "next", "__next__"}),
    ("concurrent/futures/_base.py", {"result", "wait", "as_completed"}),
)
_POOL_WORKERS = (
    ("multiprocessing/pool.py", "worker"),
    ("concurrent/futures/process.py", "_process_worker"),
)


def _running_a_task(process: ProcessEvidence) -> bool | None:
    """Whether a pool's worker process runs a task (None: it is no pool worker); a worker that
    waits in its loop for the next task runs none."""
    main = _main(process)
    frames = python_frames(main.python.frames if main is not None and main.python else ())
    for index, frame in enumerate(frames):
        if any(in_function((frame,), file, {loop}) for file, loop in _POOL_WORKERS):
            inner = frames[index - 1] if index else None
            return inner is not None and not inner.file.replace("\\", "/").endswith(
                ("multiprocessing/queues.py", "multiprocessing/connection.py")
            )
    return None


def _pool_result_edges(w: _Waiter) -> bool:
    """A thread waiting for a process pool's result waits for the pool's workers that run a
    task: their children among this process's (not the result thread of the pool, which only
    carries what a worker sends)."""
    frames = python_frames(w.thread.python.frames if w.thread.python else ())
    if not any(in_function(frames[:4], file, functions) for file, functions in _POOL_RESULTS):
        return False
    busy = [
        (c.pid, main.tid)
        for c in w.job.children(w.process.pid)
        if _running_a_task(c) and (main := _main(c)) is not None
    ]
    for worker in busy:
        w.graph.add(
            w.me,
            worker,
            _("is a worker process of the pool, running the task whose result it waits for"),
            certain=len(busy) == 1,
        )
    return bool(busy)


def _manager_edges(w: _Waiter) -> bool:
    through = manager_call(w.job, w.thread)
    if through is None:
        return False
    if through.server_pid is not None:
        server = w.job.process(through.server_pid) or w.process
        serving = [(server.pid, t.tid) for t in server.threads if serves_a_call(t)]
        for party in serving or _process_parties(server):
            w.graph.add(w.me, party, _("is the manager's server that must answer"))
    else:
        w.graph.outside[w.me] = through.words
    return True


def serves_a_call(thread: ThreadEvidence) -> bool:
    """Whether a manager server's thread is inside a call it serves (`Server.serve_client`
    running the method, `queue.get` on the shared queue), not waiting for its client's next
    request: the proxy's caller waits for that thread, not for the server's accepting one."""
    frames = python_frames(thread.python.frames if thread.python else ())
    for callee, frame in itertools.pairwise(frames):
        if serves_for_a_proxy(frame):
            return not callee.file.replace("\\", "/").endswith("/multiprocessing/connection.py")
    return False


def _child_edges(w: _Waiter) -> bool:
    if w.wait.kind is not WaitKind.CHILD:
        return False
    job, wait = w.job, w.wait
    children = [job.process(wait.peer_pid)] if wait.peer_pid else job.children(w.process.pid)
    for child in (c for c in children if c is not None):
        for party in _process_parties(child):
            w.graph.add(w.me, party, _("is the child process it waits for"))
    return True


def _pipe_edges(w: _Waiter) -> bool:
    if w.wait.kind not in (WaitKind.PIPE_READ, WaitKind.PIPE_WRITE):
        return False
    peer = w.job.process(w.wait.peer_pid)
    if peer is not None:
        for party in _process_parties(peer):
            w.graph.add(w.me, party, _("holds the pipe's other end"))
    elif _holds_other_end(w.job, w.process, w.wait):
        _own_pipe_edges(w.graph, w.me, w.process, w.thread)
    else:
        w.graph.outside[w.me] = (
            _("whoever feeds the job's standard input, outside the capture")
            if w.wait.fd == 0
            else _("a process outside the capture that holds the pipe's other end")
        )
    return True


def _socket_edges(w: _Waiter) -> bool:
    wait = w.wait
    if wait.kind not in (WaitKind.SOCKET_READ, WaitKind.SOCKET_WRITE, WaitKind.CONNECT):
        return False
    endpoint = w.job.socket(wait.target) if wait.target else None
    if endpoint is not None and endpoint.peer is not None:
        _socket_pair_edges(w.job, w.graph, w.me, (w.process, w.thread), endpoint.peer)
        return True
    peer = _loopback_peer(w.job, wait.remote) if wait.remote else None
    if peer is not None and peer.pid != w.process.pid:
        for party in _process_parties(peer):
            w.graph.add(
                w.me,
                party,
                _("owns the other end of the connection ({remote})", remote=wait.remote),
            )
    else:
        w.graph.outside[w.me] = _(
            "the peer at {remote}", remote=wait.remote or _("the other end of a socket")
        )
    return True


#: Where a task awaits I/O or time, not a future: the loop's selector wait is then its own.
_TASK_IO = (
    "asyncio/streams.py",
    "asyncio/selector_events.py",
    "asyncio/base_events.py",
    "asyncio/tasks.py",
)


def task_await(job: JobView, process: ProcessEvidence, thread: ThreadEvidence) -> str | None:
    """Where an asyncio event loop's tasks wait, when the loop sleeps in its selector and
    every pending task awaits a future, queue or event (no I/O, no timer): the loop's epoll is
    not the wait then, the tasks' awaits are, and only another thread of the process can end
    them (`call_soon_threadsafe`). None for any other thread."""
    frames = python_frames(thread.python.frames if thread.python else ())
    if not in_function(frames, "asyncio/base_events.py", {"_run_once"}):
        return None
    pending = [t for t in job.bundle.async_tasks if t.pid == process.pid and not t.done]
    if not pending or any(
        f.file.replace("\\", "/").endswith(_TASK_IO) for t in pending for f in t.awaiting
    ):
        return None
    first = next((f for f in pending[0].awaiting if origin(f) is Origin.USER), None)
    where = f"{short_file(first.file)}:{first.line}" if first else _("an unknown line")
    return _("its asyncio task {task} awaits at {where}", task=pending[0].name, where=where)


def _task_edges(w: _Waiter) -> bool:
    """A loop whose tasks await what another thread should complete (`task_await`)."""
    awaiting = task_await(w.job, w.process, w.thread)
    if awaiting is None:
        return False
    w.graph.waits[w.me] = Wait(WaitKind.FUTEX, awaiting)
    wakers = _wakers(w.process, w.thread)
    for waker in wakers:
        w.graph.add(
            w.me,
            (w.process.pid, waker.tid),
            _("could complete what the task awaits, from outside the loop"),
            certain=False,
        )
    if not wakers:
        w.graph.no_waker_left.add(w.me)
        w.graph.nobody[w.me] = _(
            "its asyncio tasks await without a timeout, and no other thread of its process is "
            "left that could complete what they await"
        )
    return True


def _poll_edges(w: _Waiter) -> bool:
    return w.wait.kind is WaitKind.POLL and _polled_pipe_edges(w.job, w.graph, w.me, w.process)


def _fifo_edges(w: _Waiter) -> bool:
    if not opening_fifo(w.thread):
        return False
    _fifo_open_edges(w.job, w.graph, w.me, (w.process, w.thread))
    return True


def _file_lock_edges(w: _Waiter) -> bool:
    """A thread waiting to lock a file (flock, fcntl) waits for the processes of the job that
    hold a lock on it: fdinfo lists a lock on an open file of theirs with that path. Without
    fdinfo's word (a process that read itself), each one that has the file open could."""
    if w.wait.kind is not WaitKind.FILE_LOCK:
        return False
    wanted = locked_file(w.job, w.process, w.thread)
    if wanted is None:
        return False
    holders, openers = [], []
    for process in w.job.processes:
        same = [f for f in process.open_files if f.target == wanted]
        if process.pid == w.process.pid or not same:
            continue
        if any(f.locked for f in same):
            holders.append(process)
        elif all(f.locked is None for f in same):
            openers.append(process)
    for holder in holders or openers:
        for party in _process_parties(holder):
            w.graph.add(
                w.me,
                party,
                _("holds a lock on {file}", file=wanted)
                if holders
                else _("has {file} open, and could hold its lock", file=wanted),
                certain=bool(holders) and len(holders) == 1,
            )
    return bool(holders or openers)


def _dataloader_edges(w: _Waiter) -> bool:
    frames = python_frames(w.thread.python.frames if w.thread.python else ())
    if not in_function(frames, "torch/utils/data/dataloader.py", {"_try_get_data", "_get_data"}):
        return False
    job = w.job
    workers = [c for c in job.children(w.process.pid) if job.role(c.pid) is Role.DATALOADER_WORKER]
    for worker in workers:
        for party in _process_parties(worker):
            w.graph.add(w.me, party, _("is a DataLoader worker that must send the next batch"))
    if workers:
        return True
    gone = set(exited_children(job, w.process.pid))
    death = next((d for d in process_deaths(job) if d.pid in gone), None)
    if death is None:
        return False
    # No worker is left, and one ended: the batch it owed never comes (PyTorch notices only
    # at its next check of its workers, seconds later, or never with a timeout of its own).
    w.graph.dead[w.me] = death
    w.graph.dead_loader_workers.add(w.me)
    w.graph.unprovable.add(w.me)  # the loader will raise for it: the job fails on its own
    return True


#: Where an eager loop over a tf.data dataset waits for its next element (native below).
_TF_DATASET_OPS = "tensorflow/python/ops/gen_dataset_ops.py"


def _tf_pipeline_edges(w: _Waiter) -> bool:
    """A thread waiting for TensorFlow to run a step (a `tf.function`, Keras's train step) or
    for a tf.data iterator's next element (an eager `for batch in dataset`) in a process where TensorFlow runs the user's Python for its input pipeline on threads of its
    own: the step waits for the next element, which those threads produce. Not lasting: the
    step's native wait is not seen, so it explains the wait and proves nothing."""
    frames = python_frames(w.thread.python.frames if w.thread.python else ())
    if not waits_in_tf_runtime(frames) and not in_function(
        frames[:1], _TF_DATASET_OPS, {"iterator_get_next", "iterator_get_next_sync"}
    ):
        return False
    producers = [
        t
        for t in w.process.threads
        if t.tid != w.thread.tid and runs_pipeline_python(t.python.frames if t.python else ())
    ]
    for producer in producers:
        w.graph.add(
            w.me,
            (w.process.pid, producer.tid),
            _("runs the user's code of the input pipeline that must produce the next element"),
            lasting=False,
        )
    readers = [t for t in w.process.threads if t.tid != w.thread.tid and _native_reader(w, t)]
    for reader in readers:
        w.graph.add(
            w.me,
            (w.process.pid, reader.tid),
            _("is a thread of TensorFlow's runtime reading the input pipeline's source"),
            lasting=False,
        )
    return bool(producers or readers)


def _native_reader(w: _Waiter, thread: ThreadEvidence) -> bool:
    """A thread with no Python stack blocked opening a FIFO or reading a pipe or socket: in a
    process that waits for a tf.data element, the runtime reading the pipeline's source."""
    if thread.python is not None and thread.python.frames:
        return False
    return opening_fifo(thread) or describe_wait(w.job, w.process, thread).kind in (
        WaitKind.PIPE_READ,
        WaitKind.SOCKET_READ,
    )


def _outside_the_job(w: _Waiter) -> bool:
    """Waits that something outside the job ends: a person, a client, the device, time."""
    thread, kind = w.thread, w.wait.kind
    if kind is WaitKind.TERMINAL:
        w.graph.outside[w.me] = _("a person typing at the terminal")
    elif kind is WaitKind.ACCEPT:
        w.graph.outside[w.me] = _("a client that connects")
    elif (
        device_wait(thread.python.frames if thread.python else (), gpu=process_uses_gpu(w.process))
        is not None
    ):
        w.graph.outside[w.me] = _("the device (a kernel or copy that has not finished)")
    elif kind is WaitKind.SLEEP:
        w.graph.outside[w.me] = _("time: it sleeps, and will wake to check again")
    else:
        return False
    return True


def _gil_edges(w: _Waiter) -> bool:
    if w.wait.kind is not WaitKind.FUTEX or w.thread.python is None:
        return False
    gil = next(
        (
            t.tid
            for t in w.process.threads
            if t.tid != w.thread.tid and t.python and t.python.owns_gil
        ),
        None,
    )
    if gil is not None:
        w.graph.add(w.me, (w.process.pid, gil), _("holds the GIL"), certain=False)
    return True


#: The edge finders, in the order they are tried: the first that knows the wait draws its edges.
_EDGE_FINDERS: tuple[Callable[[_Waiter], bool], ...] = (
    _waits_for_itself,
    _joins_a_thread,
    _exit_waits,
    _lock_edges,
    _shared_object_edges,
    _pool_result_edges,
    _primitive_edges,
    _manager_edges,
    _child_edges,
    _pipe_edges,
    _socket_edges,
    _task_edges,
    _poll_edges,
    _fifo_edges,
    _file_lock_edges,
    _dataloader_edges,
    _tf_pipeline_edges,
    _outside_the_job,
    _gil_edges,
)


def _self_address(frame: Frame) -> int | None:
    """The object a method frame runs on (`self` of `Queue.get`), by address."""
    return next((v.addr for v in frame.locals if v.name == "self"), None)


def _held_as(thread: ThreadEvidence, address: int | None) -> str | None:
    """The name by which one of the thread's frames holds the object at `address` (a local,
    or an attribute its process named), innermost first; None when none does."""
    if address is None:
        return None
    for frame in python_frames(thread.python.frames if thread.python else ()):
        for variable in (*frame.attributes, *frame.locals):
            if variable.addr == address and variable.name != "self":
                return variable.name
    return None


def _no_releaser_left(job: JobView, process: ProcessEvidence, thread: ThreadEvidence) -> bool:
    """Whether nothing could release a lock the thread waits for and no live thread holds: no
    other thread of its process, and no other process of the job, runs code of its own (the
    lock may be a multiprocessing one, which another process releases)."""
    if _wakers(process, thread):
        return False
    return not any(
        runs_python_of_its_own(t)
        for other in job.processes
        if other.pid != process.pid and not other.outside_job
        for t in other.threads
    )


def _holds_other_end(job: JobView, process: ProcessEvidence, wait: Wait) -> bool:
    """Whether the waiter's own process holds the end of the pipe it waits for the other side
    of. A read blocks only while some writer exists: when no captured process holds the write
    end, one outside the capture does (the shell or supervisor feeding standard input)."""
    wanted = "w" if wait.kind is WaitKind.PIPE_READ else "r"
    ends = job.pipe_ends(wait.target) if wait.target else []
    if not ends:
        return True  # descriptors not captured: nothing says otherwise
    return any(e.pid == process.pid and e.mode in (wanted, "rw") for e in ends)


def _socket_pair_edges(
    job: JobView,
    graph: WaitGraph,
    me: Party,
    waiter: tuple[ProcessEvidence, ThreadEvidence],
    peer_inode: int,
) -> None:
    """A connected unix socket (a `socketpair`, a duplex `multiprocessing.Pipe`) waits for
    whoever holds its peer: another process of the job, or its own process (the parent keeps
    both ends), or, when no captured process holds it, one outside the capture."""
    process, thread = waiter
    holders = {end.pid for end in job.pipe_ends(f"socket:[{peer_inode}]")}
    others = [p for pid in sorted(holders - {process.pid}) if (p := job.process(pid)) is not None]
    for other in others:
        for party in _process_parties(other):
            graph.add(me, party, _("holds the other end of the socket pair"))
    if others:
        return
    if process.pid in holders:
        _own_pipe_edges(graph, me, process, thread)
        return
    graph.outside[me] = _("a process outside the capture that holds the socket's other end")


def _fifo_open_edges(
    job: JobView, graph: WaitGraph, me: Party, waiter: tuple[ProcessEvidence, ThreadEvidence]
) -> None:
    """Opening a FIFO waits until another process opens its other end: any thread of the job
    running code of its own could; with none left, nobody will (unless one died)."""
    process, thread = waiter
    wakers = [(process.pid, t.tid) for t in _wakers(process, thread)]
    wakers += _users_elsewhere(job, process.pid)
    for waker in wakers:
        graph.add(me, waker, _("could open the FIFO's other end"), certain=False)
    if not wakers:
        graph.no_waker_left.add(me)
        graph.unprovable.add(me)
        graph.nobody[me] = _(
            "it waits for another process to open the FIFO's other end, and no thread or "
            "process of the job is left that could"
        )


def _own_pipe_edges(
    graph: WaitGraph, me: Party, process: ProcessEvidence, thread: ThreadEvidence
) -> None:
    """A pipe whose other end no other process holds (a multiprocessing Queue or Pipe whose
    writer is gone: the parent keeps both ends) can be ended only by another thread of the
    waiter's own process; with none left, by nobody, unless a provider died (`_death_edges`)."""
    wakers = _wakers(process, thread)
    for waker in wakers:
        graph.add(
            me,
            (process.pid, waker.tid),
            _("could write to the pipe, whose other end only its own process holds"),
            certain=False,
        )
    if not wakers:
        graph.no_waker_left.add(me)
        graph.nobody[me] = _(
            "no other process holds the pipe's other end, and no other thread of its own is left"
        )


def _polled_pipe_edges(job: JobView, graph: WaitGraph, me: Party, process: ProcessEvidence) -> bool:
    """A thread polling (`subprocess.communicate`, a selector) waits for data or end-of-file
    on the pipes its process reads: for whoever else holds their write ends. True when some
    process does."""
    writers = {
        end.pid
        for opened in process.open_files
        if opened.target.startswith("pipe:") and opened.mode == "r"
        for end in job.pipe_ends(opened.target)
        if end.pid != process.pid and end.mode in ("w", "rw")
    }
    for pid in sorted(writers):
        peer = job.process(pid)
        if peer is None:
            continue
        for party in _process_parties(peer):
            graph.add(me, party, _("holds the write end of a pipe it polls"))
    return bool(writers)


def _shared_edges(job: JobView, graph: WaitGraph, me: Party, primitive: Primitive) -> None:
    """A wait on an object processes share: any other process of the job running code of its
    own could end it; when none is left, nothing can (unless one died: `_death_edges`)."""
    wakers = _users_elsewhere(job, me[0])
    for waker in wakers:
        graph.add(me, waker, _("could {action}", action=primitive.waker), certain=False)
    if not wakers:
        graph.no_waker_left.add(me)
        graph.nobody[me] = _(
            "it waits in {call} without a timeout, and no other process of the job is left "
            "that could {action}",
            call=primitive.what,
            action=primitive.waker,
        )


#: Peers a rank in a collective is drawn waiting for, at most: those outside any collective
#: first (the ones that can end the wait), then those in another. A job of thousands of ranks
#: split between two collectives would otherwise have millions of edges.
MAX_PEER_EDGES = 16


def _rank_edges(job: JobView, graph: WaitGraph) -> None:
    """A rank waiting inside a collective waits for the peers that are not in it."""
    view = rank_view(job)
    # One state per party: the ranks of a class (`nodes.classes`) share their process.
    parties: dict[Party, RankState] = {}
    for low, _high, state in view.all.runs:  # once a run, as its lowest rank
        if state.process is not None and state.thread is not None:
            parties.setdefault((state.process.pid, state.thread.tid), as_rank(state, low))
    states = list(parties.values())
    outside = [s for s in states if not s.in_collective]
    inside: dict[tuple[object, object], list[RankState]] = {}
    for state in states:
        if state.in_collective:
            inside.setdefault((state.call, state.seq), []).append(state)
    waiting = [s for group in inside.values() for s in group]
    for key, group in inside.items():
        targets = outside[:MAX_PEER_EDGES]
        if len(targets) < MAX_PEER_EDGES:
            more = (s for s in waiting if (s.call, s.seq) != key)
            targets = targets + list(itertools.islice(more, MAX_PEER_EDGES - len(targets)))
        # The same words for every rank of the group (they share the call): once per peer.
        whys = [
            _("is rank {rank}, which has not joined the {call}", rank=peer.rank, call=key[0])
            for peer in targets
        ]
        for state in group:
            me: Party = (state.process.pid, state.thread.tid)  # type: ignore[union-attr]
            for peer, why in zip(targets, whys, strict=True):
                graph.add(
                    me,
                    (peer.process.pid, peer.thread.tid),  # type: ignore[union-attr]
                    why,
                    lasting=False,
                )


def build_wait_graph(job: JobView) -> WaitGraph:
    """The job's wait-for graph, built once per job."""
    return job.derived("wait_graph", _build)


def _build(job: JobView) -> WaitGraph:
    graph = WaitGraph()
    for process, thread in job.threads():
        try:
            _thread_edges(job, graph, process, thread)
        except (ValueError, KeyError, IndexError):
            continue  # one odd thread does not keep the rest of the graph from being built
    _rank_edges(job, graph)
    _wakers_that_wait_for_it(graph)
    _death_edges(job, graph)
    return graph


def _wakers_that_wait_for_it(graph: WaitGraph) -> None:
    """A wait that only other threads could end, each of which waits for it (a FIFO that only
    the thread waiting for its reader could open): nobody will, unless a party that died
    would have (`_death_edges`, drawn next). Found once every edge is drawn, since a waker's
    own wait may be drawn after it; proves nothing (the wakers' waits may not last)."""
    for party, edges in graph.edges.items():
        if party in graph.nobody or any(e.certain for e in edges):
            continue
        wakers = {e.waited for e in edges}
        if all(
            any(e.certain and e.waited == party for e in graph.edges.get(w, ())) for w in wakers
        ):
            graph.nobody[party] = _(
                "only other threads could end it ({why}), and each of them waits for it",
                why=edges[0].why,
            )
            graph.no_waker_left.add(party)  # as good as none left: one may have died
            graph.unprovable.add(party)


#: Waits that a death cannot explain: they end by themselves, or something else ends them.
_NOT_FOR_THE_DEAD = frozenset({WaitKind.RUNNING, WaitKind.SLEEP, WaitKind.STOPPED})


def _death_edges(job: JobView, graph: WaitGraph) -> None:
    """A waiter that no live party is known to end, in a job where a provider died, waits for
    the dead one: a thread that died in its own process first, else a process of the job that
    died (of an exception, then one that simply ended)."""
    threads = thread_deaths(job)
    processes = process_deaths(job)
    if not threads and not processes:
        return
    for party, wait in graph.waits.items():
        if wait.kind in _NOT_FOR_THE_DEAD or (
            party in graph.outside and not _accepts_from_its_own(job, graph, party, wait, processes)
        ):
            continue
        if any(e.certain for e in graph.edges.get(party, ())):
            continue
        if party in graph.nobody and party not in graph.no_waker_left:
            continue
        pid = party[0]
        death = next((d for d in threads if d.pid == pid), None) or next(
            (d for d in threads if d.pid is None), None
        )
        if death is None:
            death = next(
                (d for d in processes if d.ended_by is not None or d.raised is not None), None
            )
        if death is None and processes:
            death = _nearest_death(job, pid, processes)
        if death is not None:
            graph.dead[party] = death
            if party not in graph.no_waker_left:
                # Linked for want of a better explanation (a wait the capture does not name, a
                # connection anyone may make): it explains the wait, it proves nothing (a
                # framework's runtime may yet time out and fail on its own).
                graph.unprovable.add(party)


def _nearest_death(job: JobView, pid: int, processes: list[Death]) -> Death | None:
    """A process that ended quietly, nearest the waiter's first: its own descendants, then
    its siblings' (a manager's server waits for the clients its parent started beside it)."""
    descendants = _descendants(job, pid)
    death = next((d for d in processes if d.pid in descendants), None)
    process = job.process(pid)
    if death is None and process is not None and process.ppid is not None:
        kin = (_descendants(job, process.ppid) | set(exited_children(job, process.ppid))) - {pid}
        death = next((d for d in processes if d.pid in kin), None)
    return death


def _accepts_from_its_own(
    job: JobView, graph: WaitGraph, party: Party, wait: Wait, processes: list[Death]
) -> bool:
    """An accept() that anyone could end, in a process none of whose children is left to
    connect and one of them died: the child started to connect is the likelier client than a
    stranger (a child forked after the listening socket inherits it, and knows its address).
    While a child lives, it may still connect: the wait is left to what that child waits on;
    but not one that waits for the acceptor itself (multiprocessing's resource tracker, reading
    a pipe only the acceptor writes)."""
    if wait.kind is not WaitKind.ACCEPT:
        return False
    if any(not _waits_for(graph, (child, child), party) for child in _descendants(job, party[0])):
        return False
    gone = set(exited_children(job, party[0]))
    return any(d.pid in gone or (d.pid is None and d.raised is not None) for d in processes)


def _waits_for(graph: WaitGraph, waiter: Party, waited: Party) -> bool:
    """Whether `waiter` surely waits for `waited` (a certain edge between them)."""
    return any(e.certain and e.waited == waited for e in graph.edges.get(waiter, ()))


def _descendants(job: JobView, pid: int) -> set[int]:
    found: set[int] = set()
    todo = [pid]
    while todo:
        for child in job.children(todo.pop()):
            if child.pid not in found:
                found.add(child.pid)
                todo.append(child.pid)
    return found
