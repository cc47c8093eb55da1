"""The blocking calls of Python's threading world (`queue.Queue.get`, `Event.wait`, ...) that a
thread can wait in forever, and what another thread would have to do to end the wait."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from hangdoctor.analysis.frames import (
    Origin,
    alone,
    in_function,
    origin,
    python_frames,
    runs_python_of_its_own,
    runs_user_code,
)
from hangdoctor.analysis.job import JobView
from hangdoctor.evidence.model import Frame, ProcessEvidence, ThreadEvidence
from hangdoctor.i18n import N_, _


@dataclass(frozen=True)
class Primitive:
    """A blocking call of the threading world, and what would end the wait."""

    file: str  # stdlib file it lives in
    function: str  # as py-spy names it
    what_message: str  # for the title (marked with N_ where it has words)
    waker_message: str  # what another thread would have to do (N_)

    @property
    def what(self) -> str:
        """The call, in the report's language (`queue.Queue.get()`)."""
        return _(self.what_message)

    @property
    def waker(self) -> str:
        """What another thread would have to do, in the report's language."""
        return _(self.waker_message)


# Ordered outermost-meaning first: queue.get waits inside Condition.wait, which is reported
# as the queue.
PRIMITIVES = (
    Primitive("queue.py", "Queue.get", "queue.Queue.get()", N_("put an item into the queue")),
    Primitive(
        "queue.py",
        "Queue.put",
        N_("queue.Queue.put() into a full queue"),
        N_("take an item out of the queue"),
    ),
    Primitive(
        "queue.py",
        "Queue.join",
        "queue.Queue.join()",
        N_("take every item out of the queue and call task_done() for each"),
    ),
    Primitive(
        "concurrent/futures/_base.py",
        "Future.result",
        "Future.result()",
        N_("set the future's result (the thread or executor that runs its work)"),
    ),
    Primitive("threading.py", "Event.wait", "threading.Event.wait()", N_("set the event")),
    Primitive("threading.py", "Barrier.wait", "threading.Barrier.wait()", N_("reach the barrier")),
    Primitive(
        "threading.py",
        "Semaphore.acquire",
        "threading.Semaphore.acquire()",
        N_("release the semaphore"),
    ),
    # wait_for before wait: the user's code calls wait_for, which calls wait.
    Primitive(
        "threading.py",
        "Condition.wait_for",
        "threading.Condition.wait_for()",
        N_("notify the condition"),
    ),
    Primitive(
        "threading.py", "Condition.wait", "threading.Condition.wait()", N_("notify the condition")
    ),
)


_PRIMITIVE_FUNCTIONS = frozenset(p.function for p in PRIMITIVES)

#: Blocking calls on objects that processes share (created before a fork, or passed to a
#: child): another process of the job, not another thread, is the one to end the wait.
SHARED_PRIMITIVES = (
    Primitive(
        "multiprocessing/synchronize.py",
        "Event.wait",
        "multiprocessing.Event.wait()",
        N_("set the event"),
    ),
    Primitive(
        "multiprocessing/synchronize.py",
        "Barrier.wait",
        "multiprocessing.Barrier.wait()",
        N_("reach the barrier"),
    ),
    Primitive(
        "multiprocessing/synchronize.py",
        "Condition.wait_for",
        "multiprocessing.Condition.wait_for()",
        N_("notify the condition"),
    ),
    Primitive(
        "multiprocessing/synchronize.py",
        "Condition.wait",
        "multiprocessing.Condition.wait()",
        N_("notify the condition"),
    ),
)


def shared_call(thread: ThreadEvidence) -> tuple[Primitive, Frame] | None:
    """The blocking call on a process-shared object that the user's own code made, without a
    timeout."""
    frames = python_frames(thread.python.frames if thread.python else ())
    for primitive in SHARED_PRIMITIVES:
        for index, frame in enumerate(frames):
            path = frame.file.replace("\\", "/")
            if frame.function != primitive.function or not path.endswith("/" + primitive.file):
                continue
            caller = frames[index + 1] if index + 1 < len(frames) else None
            if caller is None or origin(caller) is not Origin.USER:
                break
            timeout, _block = timeout_and_block(frame, caller)
            return (primitive, frame) if timeout == "None" else None
    return None


def blocking_call(thread: ThreadEvidence) -> tuple[Primitive, Frame] | None:
    """The primitive the thread waits in, when the user's own code called it directly: one a
    library waits in for its own threads (multiprocessing.Pool's result handler sets the event
    Pool.map waits on) is the library's business."""
    return primitive_call(thread, with_timeout=False)


def primitive_call(thread: ThreadEvidence, *, with_timeout: bool) -> tuple[Primitive, Frame] | None:
    """The primitive the user's own code waits in; with `with_timeout`, also one given a
    timeout (a loop that waits again and again)."""
    frames = python_frames(thread.python.frames if thread.python else ())
    named = [(i, f) for i, f in enumerate(frames) if f.function in _PRIMITIVE_FUNCTIONS]
    if not named:
        return None
    for primitive in PRIMITIVES:
        for index, frame in named:
            if frame.function == primitive.function and frame.file.replace("\\", "/").endswith(
                "/" + primitive.file
            ):
                caller = frames[index + 1] if index + 1 < len(frames) else None
                if caller is None or (
                    origin(caller) is not Origin.USER and not serves_for_a_proxy(caller)
                ):
                    return None
                timeout, block = timeout_and_block(frame, caller)
                if with_timeout or (timeout == "None" and block != "False"):
                    return primitive, frame
                return None
    return None


def serves_for_a_proxy(caller: Frame) -> bool:
    """Whether a Manager's server calls the primitive for a proxy's caller (`serve_client`
    runs `shared_queue.get()` when a client calls `proxy.get()`): the wait is the user's."""
    return caller.function.split(".")[-1] == "serve_client" and caller.file.replace(
        "\\", "/"
    ).endswith("/multiprocessing/managers.py")


#: Positional arguments of a blocking call that are not its `block` or `timeout`.
_LEADING_ARGUMENTS = {"put": 1}


def timeout_and_block(frame: Frame, caller: Frame) -> tuple[str, str]:
    """The `timeout` and `block` arguments (as py-spy shows them) of the blocking call at
    `frame`. Without local variables (stacks from faulthandler's dump), the caller's line
    tells: `q.get()` gives none; a call with more arguments may have given a timeout, and is
    taken to have (`?`)."""
    if frame.locals:
        timeout = next((v.repr for v in frame.locals if v.name == "timeout"), "None")
        block = next((v.repr for v in frame.locals if v.name == "block"), "True")
        return (timeout if timeout is not None else "?"), (block if block is not None else "?")
    method = frame.function.rsplit(".", 1)[-1]
    given = call_arguments(caller.code or "", method)
    if given is None:
        return "?", "True"
    allowed = _LEADING_ARGUMENTS.get(method, 0)
    if any(word in given for word in ("timeout", "block")) or len(given) > allowed:
        return "?", "True"
    return "None", "True"


def given_timeout(thread: ThreadEvidence, frame: Frame) -> str:
    """The timeout of the blocking call at `frame`, one of `thread`'s frames (`None`: none)."""
    frames = python_frames(thread.python.frames if thread.python else ())
    index = next((i for i, f in enumerate(frames) if f is frame), None)
    if index is None or index + 1 >= len(frames):
        return next((v.repr or "?" for v in frame.locals if v.name == "timeout"), "None")
    return timeout_and_block(frame, frames[index + 1])[0]


#: What a `timeout` argument is when the wait has none (`Thread.join` passes -1 down to the lock).
_FOREVER = frozenset({"None", "-1", "-1.0"})


def waits_with_timeout(thread: ThreadEvidence) -> bool:
    """Whether the thread's wait may end by itself: some frame of its stack was given a
    timeout (a `get(timeout=5)` whose caller then raises, an event loop with a timer due), or
    its blocking call may have been given one where the stack has no local variables."""
    frames = python_frames(thread.python.frames if thread.python else ())
    for frame in frames:
        for variable in frame.locals:
            if variable.name == "timeout" and variable.repr not in _FOREVER:
                return True
    call = primitive_call(thread, with_timeout=True)
    return call is not None and given_timeout(thread, call[1]) not in _FOREVER


def call_arguments(code: str, method: str) -> list[str] | None:
    """The arguments of the call `method(...)` on a line of code, as text (None when the line
    holds no complete such call)."""
    start = code.find(method + "(")
    while start > 0 and (code[start - 1].isalnum() or code[start - 1] == "_"):
        start = code.find(method + "(", start + 1)
    if start < 0:
        return None
    depth, arguments, current = 0, [], ""
    for char in code[start + len(method) :]:
        if char in "([{":
            depth += 1
            if depth == 1:
                continue
        elif char in ")]}":
            depth -= 1
            if depth == 0:
                if current.strip():
                    arguments.append(current.strip())
                return arguments
        elif char == "," and depth == 1:
            arguments.append(current.strip())
            current = ""
            continue
        current += char
    return None


def waits_on_futex(thread: ThreadEvidence) -> bool:
    """Asleep in the kernel where Python's locks and conditions sleep (or state unknown)."""
    kernel = thread.kernel
    return kernel is not None and kernel.state == "S" and kernel.syscall_name in ("futex", None)


@dataclass(frozen=True)
class LoneWait:
    """A thread waiting, without a timeout, in a primitive only another thread of its process
    could end, in a process where no other thread runs the user's code."""

    process: ProcessEvidence
    thread: ThreadEvidence
    primitive: Primitive
    frame: Frame  # the primitive's own frame
    #: The other threads running the user's code, each blocked until this one ends: joining
    #: it (`thread.join()`), or the interpreter's exit waiting for its non-daemon threads.
    joiners: tuple[ThreadEvidence, ...] = ()


def lone_waits(job: JobView) -> Iterator[LoneWait]:
    """Every such wait in the job."""
    for process in job.processes:
        for thread in process.threads:
            if not waits_on_futex(thread):
                continue
            found = blocking_call(thread)
            if found is None:
                continue
            if found[0].function == "Future.result" and _executor_at_work(job, process, thread):
                continue  # an executor's own threads or processes set its futures
            if alone(process, thread):
                joiners = tuple(
                    t
                    for t in process.threads
                    if t.tid != thread.tid and waits_for_end_of(t, thread)
                )
                yield LoneWait(process, thread, *found, joiners=joiners)
                continue
            others = [t for t in process.threads if t.tid != thread.tid and runs_user_code(t)]
            if others and all(waits_for_end_of(t, thread) for t in others):
                yield LoneWait(process, thread, *found, joiners=tuple(others))


def _executor_at_work(job: JobView, process: ProcessEvidence, thread: ThreadEvidence) -> bool:
    """Whether something besides the user's threads could set a future: another thread with a
    Python stack of its own (an executor's manager or worker thread), or a child process (a
    process pool's worker)."""
    return bool(job.children(process.pid)) or any(
        t.tid != thread.tid and runs_python_of_its_own(t) and not runs_user_code(t)
        for t in process.threads
    )


def _self_in(thread: ThreadEvidence, functions: set[str]) -> int | None:
    """The address of `self` in the thread's first threading.py frame running one of
    `functions`: a Thread object, as py-spy reports it."""
    for frame in thread.python.frames if thread.python else ():
        if in_function((frame,), "/threading.py", functions):
            return next((v.addr for v in frame.locals if v.name == "self"), None)
    return None


def thread_object(thread: ThreadEvidence) -> int | None:
    """The address of the thread's `threading.Thread` object (its bootstrap frame's `self`)."""
    return _self_in(thread, {"_bootstrap_inner"})


def at_exit(thread: ThreadEvidence) -> bool:
    """Whether the thread is the interpreter's exit waiting for non-daemon threads."""
    return in_function(
        thread.python.frames if thread.python else (), "/threading.py", {"_shutdown"}
    )


def joined_thread(thread: ThreadEvidence) -> int | None:
    """The address of the Thread object this thread waits in `join()` for, if it does."""
    return _self_in(thread, {"join", "_wait_for_tstate_lock"})


def waits_for_end_of(other: ThreadEvidence, thread: ThreadEvidence) -> bool:
    """Whether `other` can do nothing until `thread` ends: it joins that very thread, or it is
    the interpreter's exit, which joins every non-daemon thread."""
    if at_exit(other):
        return True
    joined = joined_thread(other)
    return joined is not None and joined == thread_object(thread)


def waits_in_iterator(thread: ThreadEvidence, frame: Frame) -> bool:
    """Whether the blocking call at `frame` (the primitive's frame) is made on behalf of an
    iterator that a `for` loop of the user's reads: its caller is a `__next__`/`__iter__` or a
    generator whose own caller is a `for` header. That is how batches reach a training loop
    (a prefetching loader, a queue-backed dataset)."""
    frames = python_frames(thread.python.frames if thread.python else ())
    index = next((i for i, f in enumerate(frames) if f is frame), None)
    if index is None or index + 1 >= len(frames):
        return False
    caller = frames[index + 1]
    if caller.function.split(".")[-1] in ("__next__", "__iter__", "__anext__"):
        return True
    outer = frames[index + 2] if index + 2 < len(frames) else None
    code = (outer.code or "").lstrip() if outer is not None else ""
    return code.startswith(("for ", "async for ")) or (" for " in code and "[" in code)


# The reads of multiprocessing's queues and connections, outermost-meaning first: (file under
# multiprocessing/, function as py-spy names it, what it is for a title).
_MP_READS = (
    ("queues.py", "Queue.get", "multiprocessing.Queue.get()"),
    ("queues.py", "SimpleQueue.get", "multiprocessing.SimpleQueue.get()"),
    ("connection.py", "_ConnectionBase.recv", "multiprocessing Connection.recv()"),
    ("connection.py", "_ConnectionBase.recv_bytes", "multiprocessing Connection.recv_bytes()"),
)


@dataclass(frozen=True)
class QueueRead:
    """A read of a multiprocessing queue or connection that the user's code made."""

    what: str
    frame: Frame  # multiprocessing's frame
    caller: Frame  # the user's frame that called it
    timeout: bool  # whether it was given one (or does not block)


_MP_WRITES = (
    ("queues.py", "JoinableQueue.put", "multiprocessing.JoinableQueue.put()"),
    ("queues.py", "Queue.put", "multiprocessing.Queue.put()"),
)


def multiprocessing_put(thread: ThreadEvidence) -> QueueRead | None:
    """A put into a bounded multiprocessing queue that the user's code made without a timeout,
    where the thread waits (the queue is full)."""
    return _mp_call(thread, _MP_WRITES, any_timeout=False)


def multiprocessing_read(thread: ThreadEvidence, *, any_timeout: bool = False) -> QueueRead | None:
    """The multiprocessing queue or connection read the user's code made; only one without a
    timeout unless `any_timeout`."""
    return _mp_call(thread, _MP_READS, any_timeout=any_timeout)


def _mp_call(
    thread: ThreadEvidence, calls: tuple[tuple[str, str, str], ...], any_timeout: bool
) -> QueueRead | None:
    frames = python_frames(thread.python.frames if thread.python else ())
    for file, function, what in calls:  # outermost meaning first
        for index, frame in enumerate(frames):
            path = frame.file.replace("\\", "/")
            if not (path.endswith("/multiprocessing/" + file) and frame.function == function):
                continue
            caller = frames[index + 1] if index + 1 < len(frames) else None
            if caller is None or origin(caller) is not Origin.USER:
                return None
            timeout, block = timeout_and_block(frame, caller)
            bounded = timeout != "None" or block == "False"
            return QueueRead(what, frame, caller, bounded) if any_timeout or not bounded else None
    return None


@dataclass(frozen=True)
class ManagerCall:
    """A call through a multiprocessing Manager proxy, waiting for the manager's server."""

    proxy: str  # e.g. `AcquirerProxy` (a Manager().Lock()), `DictProxy`
    server_pid: int | None  # the manager's server process, when it was captured
    words: str  # for the evidence


def manager_call(job: JobView, thread: ThreadEvidence) -> ManagerCall | None:
    """The Manager proxy call the thread waits in (`BaseProxy._callmethod`), if any: the wait
    is for the manager's server process, which runs the call and replies."""
    frames = python_frames(thread.python.frames if thread.python else ())
    call = next(
        (
            f
            for f in frames
            if f.file.replace("\\", "/").endswith("/multiprocessing/managers.py")
            and f.function.split(".")[-1] == "_callmethod"
        ),
        None,
    )
    if call is None:
        return None
    shown = next((v.repr for v in call.locals if v.name == "self"), "") or ""
    proxy = shown.strip("<>").split(" at ")[0] or _("a proxy")
    server = next(
        (
            p
            for p in job.processes
            for t in p.threads[:1]
            if any(
                f.function.split(".")[-1] == "_run_server"
                for f in (t.python.frames if t.python else ())
            )
        ),
        None,
    )
    words = (
        _(
            "the call goes through a multiprocessing Manager ({proxy}); its server is "
            "{server}, which has not answered",
            proxy=proxy,
            server=job.describe_process(server.pid),
        )
        if server is not None
        else _(
            "the call goes through a multiprocessing Manager ({proxy}); its server process "
            "was not captured, which has not answered",
            proxy=proxy,
        )
    )
    return ManagerCall(proxy, server.pid if server else None, words)


#: A wait inside the first method that only the second, on the same object, ends by
#: returning: called from within the second (on the thread that runs it), it waits for itself.
#: socketserver documents it: shutdown() "must be called while serve_forever() is running in a
#: different thread otherwise it will deadlock"
#: (https://docs.python.org/3/library/socketserver.html#socketserver.BaseServer.shutdown).
_WAITS_FOR_OWN_CALLER = (
    (("socketserver.py", "BaseServer.shutdown"), ("socketserver.py", "BaseServer.serve_forever")),
)


@dataclass(frozen=True)
class OwnCallerWait:
    """A thread that waits for a call further up its own stack to return."""

    waiting: Frame  # the library method that waits (`BaseServer.shutdown`)
    outer: Frame  # the call it waits for, on the same object (`BaseServer.serve_forever`)


def _self_address(frame: Frame) -> int | None:
    return next((v.addr for v in frame.locals if v.name == "self" and v.addr), None)


def waits_for_own_caller(thread: ThreadEvidence) -> OwnCallerWait | None:
    """The wait, if the thread waits for a call on its own stack to return (the same object,
    told by its address, in both frames)."""
    frames = python_frames(thread.python.frames if thread.python else ())
    for (inner_file, inner), (outer_file, outer) in _WAITS_FOR_OWN_CALLER:
        for index, frame in enumerate(frames):
            if frame.function != inner or not frame.file.endswith(inner_file):
                continue
            address = _self_address(frame)
            for above in frames[index + 1 :]:
                if (
                    above.function == outer
                    and above.file.endswith(outer_file)
                    and address is not None
                    and _self_address(above) == address
                ):
                    return OwnCallerWait(frame, above)
    return None
