"""The wait matrix (issue 27): one generated program per waiting primitive x fate of whoever
should end the wait, with the expected verdict, category and lines generated with it.

The main thread waits on one primitive (the line marked `# HANG: waiter`); a provider (a thread,
a process, a pool's worker, a child program) should end the wait, and meets one fate first:

- exception: it dies of an exception (`# HANG: sink`, the raise);
- signal: it is killed by SIGKILL (`# HANG: sink`, the kill; a SIGKILL leaves no trace of its
  line, so the waiter's line is right too);
- exit: it returns without providing (`# HANG: sink`, the return; likewise);
- chain: it waits for a third party, which dies of an exception (`# HANG: sink`, the raise);
- cycle: it waits for a lock that the waiter holds while waiting (`# HANG: sink`, its wait);
- never_started: it was created and never started (`# HANG: sink`, its creation);
- outside: it left a process running outside the job's tree that holds the other end
  (`# HANG: sink`, where the orphan sleeps).

Whoever ends the wait decides the category, by the table `EXPECTED` (hangdoctor's own table is
`hangdoctor.analysis.sink_category`): a wait through a pipe, FIFO or socket whose provider is
gone is blocked I/O (`THROUGH_A_MEDIUM`), a wait on anything else a deadlock; a primitive whose wait ends
anyway when its provider ends (a join, an exception carried back, a lock the kernel releases)
makes no hang there, and `IMPOSSIBLE` says why for each such cell.

    python tests/scenarios/wait_matrix.py          # write the programs again
    python tests/scenarios/wait_matrix.py --check  # exit 1 when one is out of date
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.scenarios.generated import write_or_check
from tests.scenarios.scenario import PROGRAMS, Scenario

FOLDER = PROGRAMS / "waits"
HANG_TIMEOUT_S = 3.0

FATES = ("exception", "signal", "exit", "chain", "cycle", "never_started", "outside")

#: What a hang of each fate is, and which marked lines the culprit may point at.
EXPECTED: dict[str, tuple[str, tuple[str, ...]]] = {
    "exception": ("process.deadlock", ("sink",)),
    "signal": ("process.deadlock", ("sink", "waiter")),
    "exit": ("process.deadlock", ("sink", "waiter")),
    "chain": ("process.deadlock", ("sink",)),
    "cycle": ("process.deadlock", ("sink", "waiter")),
    "never_started": ("process.deadlock", ("sink", "waiter")),
    "outside": ("process.blocked_io", ("sink", "waiter")),
}

#: The same, for a primitive that waits through a pipe, FIFO or socket (`Primitive.medium`):
#: users name such a wait by its medium ("recv() hangs"), whoever should have answered. In a
#: chain the last wait is the provider's own, on a `multiprocessing.Event`: a deadlock.
THROUGH_A_MEDIUM: dict[str, tuple[str, tuple[str, ...]]] = {
    **EXPECTED,
    **{
        fate: ("process.blocked_io", EXPECTED[fate][1])
        for fate in ("exception", "signal", "exit", "never_started")
    },
}


@dataclass(frozen=True)
class Primitive:
    """One way to wait, and what ends it.

    `setup` runs in main before the provider starts (module globals, inherited by forked
    children); `hold` is the provider's first act (taking what it will release), `provide`
    what ends the wait; `wait` is the main thread's waiting statement, `after_start` what main
    does between starting the provider and waiting."""

    name: str
    kind: str  # thread, process, pool, executor, child
    imports: tuple[str, ...]
    setup: str
    provide: str
    wait: str
    hold: str = ""
    after_start: str = ""
    #: fate -> why that fate cannot make this wait hang (the cell does not exist)
    impossible: tuple[tuple[str, str], ...] = ()
    #: fate -> (verdict, category, markers) where the fate is not a hang of this primitive
    outcome: tuple[tuple[str, tuple[str, str, tuple[str, ...]]], ...] = ()
    #: what the orphan of the `outside` fate opens before it sleeps (beyond what it inherits)
    orphan_keeps: str = ""
    #: whether the wait goes through a pipe, FIFO or socket (`THROUGH_A_MEDIUM`)
    medium: bool = False
    #: module-level text (functions the wait calls), after the imports
    module: str = ""
    #: fate -> the provider's act for that fate, where the common one (`_fate_line`) does not fit
    fate_lines: tuple[tuple[str, str], ...] = ()
    #: the hang timeout its cells run with: above any watchdog of the primitive's own
    hang_timeout_s: float = HANG_TIMEOUT_S


_ENDS_WITH_THREAD = "the wait ends when the thread ends, however it ends"
_ENDS_WITH_PROCESS = "the wait ends when the process ends, however it ends"
_NO_ORPHAN_FOR_THREADS = "a thread cannot outlive its process or leave the job's tree"
_NO_SIGNAL_FOR_THREADS = "a signal kills a whole process, not one thread"
_CARRIED = "failed", "process.exception", ("sink",)
_EOF = "the other end closes when its last holder ends: the read sees EOF"
_NO_EOF = "a queue, event or lock does not end with its holders: an orphan changes nothing"
_FLOCK = "the kernel releases a flock when its last holder ends"
_POOL_STARTS = "the pool starts its own workers"

_THREAD_COMMON = (("signal", _NO_SIGNAL_FOR_THREADS), ("outside", _NO_ORPHAN_FOR_THREADS))

PRIMITIVES: tuple[Primitive, ...] = (
    Primitive(
        "lock",
        "thread",
        ("threading",),
        "    global LOCK\n    LOCK = threading.Lock()\n    LOCK.acquire()\n",
        "LOCK.release()",
        "LOCK.acquire()",
        impossible=_THREAD_COMMON,
    ),
    Primitive(
        "rlock",
        "thread",
        ("threading",),
        "    global LOCK\n    LOCK = threading.RLock()\n",
        "LOCK.release()",
        "LOCK.acquire()",
        hold="LOCK.acquire()",
        after_start="    time.sleep(0.5)  # the provider takes the lock first\n",
        impossible=(
            *_THREAD_COMMON,
            ("never_started", "an RLock is released only by the thread that holds it"),
        ),
    ),
    Primitive(
        "condition",
        "thread",
        ("threading",),
        "    global COND, DONE\n    COND = threading.Condition()\n    DONE = []\n",
        "with COND:\n        DONE.append(1)\n        COND.notify_all()",
        "with COND:\n        COND.wait_for(lambda: DONE)",
        impossible=_THREAD_COMMON,
    ),
    Primitive(
        "event",
        "thread",
        ("threading",),
        "    global EVENT\n    EVENT = threading.Event()\n",
        "EVENT.set()",
        "EVENT.wait()",
        impossible=_THREAD_COMMON,
    ),
    Primitive(
        "semaphore",
        "thread",
        ("threading",),
        "    global SEM\n    SEM = threading.Semaphore(0)\n",
        "SEM.release()",
        "SEM.acquire()",
        impossible=_THREAD_COMMON,
    ),
    Primitive(
        "barrier",
        "thread",
        ("threading",),
        "    global BARRIER\n    BARRIER = threading.Barrier(2)\n",
        "BARRIER.wait()",
        "BARRIER.wait()",
        impossible=_THREAD_COMMON,
    ),
    Primitive(
        "thread_join",
        "thread",
        ("threading",),
        "",
        "pass",
        "provider_thread.join()",
        impossible=(*_THREAD_COMMON, ("exception", _ENDS_WITH_THREAD), ("exit", _ENDS_WITH_THREAD)),
        outcome=(("never_started", ("failed", "process.exception", ("waiter",))),),
    ),
    Primitive(
        "queue_get",
        "thread",
        ("queue", "threading"),
        "    global QUEUE\n    QUEUE = queue.Queue()\n",
        "QUEUE.put(1)",
        "QUEUE.get()",
        impossible=_THREAD_COMMON,
    ),
    Primitive(
        "queue_join",
        "thread",
        ("queue", "threading"),
        "    global QUEUE\n    QUEUE = queue.Queue()\n    QUEUE.put(1)\n",
        "QUEUE.task_done()",
        "QUEUE.join()",
        hold="QUEUE.get()",
        impossible=_THREAD_COMMON,
    ),
    Primitive(
        "future_result",
        "executor",
        ("concurrent.futures", "threading"),
        "    global POOL\n    POOL = concurrent.futures.ThreadPoolExecutor(1)\n",
        "return 1",
        "future.result()",
        impossible=(
            *_THREAD_COMMON,
            ("exit", "a return is the result: the wait ends"),
            ("never_started", "the executor starts its own threads"),
        ),
        outcome=(("exception", _CARRIED),),
    ),
    Primitive(
        "mp_queue_get",
        "process",
        ("multiprocessing",),
        "    global QUEUE\n    QUEUE = multiprocessing.Queue()\n",
        "QUEUE.put(1)",
        "QUEUE.get()",
        impossible=(("outside", _NO_EOF),),
        medium=True,
    ),
    Primitive(
        "mp_simplequeue_get",
        "process",
        ("multiprocessing",),
        "    global QUEUE\n    QUEUE = multiprocessing.SimpleQueue()\n",
        "QUEUE.put(1)",
        "QUEUE.get()",
        impossible=(("outside", _NO_EOF),),
        medium=True,
    ),
    Primitive(
        "mp_pipe_recv",
        "process",
        ("multiprocessing",),
        "    global RECV, SEND\n    RECV, SEND = multiprocessing.Pipe()\n",
        "SEND.send(1)",
        "RECV.recv()",
        impossible=(("outside", "main keeps its own end of a duplex Pipe: no EOF either way"),),
        medium=True,
    ),
    Primitive(
        "mp_event",
        "process",
        ("multiprocessing",),
        "    global EVENT\n    EVENT = multiprocessing.Event()\n",
        "EVENT.set()",
        "EVENT.wait()",
        impossible=(("outside", _NO_EOF),),
    ),
    Primitive(
        "mp_lock",
        "process",
        ("multiprocessing",),
        "    global LOCK\n    LOCK = multiprocessing.Lock()\n    LOCK.acquire()\n",
        "LOCK.release()",
        "LOCK.acquire()",
        impossible=(("outside", _NO_EOF),),
    ),
    Primitive(
        "process_join",
        "process",
        ("multiprocessing",),
        "",
        "pass",
        "provider_process.join()",
        impossible=(
            ("exception", _ENDS_WITH_PROCESS),
            ("signal", _ENDS_WITH_PROCESS),
            ("exit", _ENDS_WITH_PROCESS),
            ("outside", _ENDS_WITH_PROCESS),
        ),
        outcome=(("never_started", ("failed", "process.exception", ("waiter",))),),
    ),
    Primitive(
        "pool_apply_get",
        "pool",
        ("multiprocessing",),
        "    global POOL\n    POOL = multiprocessing.Pool(1)\n",
        "return 1",
        "result.get()",
        impossible=(
            ("exit", "a return is the result: the wait ends"),
            ("never_started", _POOL_STARTS),
            ("outside", _NO_EOF),
        ),
        outcome=(
            ("exception", _CARRIED),
            ("signal", ("hung", "data.worker_killed", ("sink", "waiter"))),
        ),
    ),
    Primitive(
        "procpool_result",
        "executor",
        ("concurrent.futures", "multiprocessing"),
        "    global POOL\n    POOL = concurrent.futures.ProcessPoolExecutor(1)\n",
        "return 1",
        "future.result()",
        impossible=(
            ("exit", "a return is the result: the wait ends"),
            ("never_started", _POOL_STARTS),
            ("outside", _NO_EOF),
        ),
        outcome=(
            ("exception", _CARRIED),
            ("signal", ("failed", "data.worker_killed", ("sink", "waiter"))),
        ),
    ),
    Primitive(
        "fifo_read",
        "process",
        ("multiprocessing", "os", "tempfile"),
        "    global FIFO\n    FIFO = os.path.join(tempfile.mkdtemp(), 'fifo')\n"
        "    os.mkfifo(FIFO)\n",
        "with open(FIFO, 'w') as out:\n        out.write('1')",
        # open() blocks until a writer opens the other end: the wait may be either line
        "with open(FIFO) as fifo:  # HANG: waiter\n        fifo.read()",
        impossible=(
            (
                "never_started",
                "nothing holds the FIFO: an unstarted provider is an open() "
                "that nobody will answer, the same cell as exit",
            ),
        ),
        orphan_keeps="open(FIFO, 'w')",
        medium=True,
    ),
    Primitive(
        "os_pipe_read",
        "process",
        ("multiprocessing", "os"),
        "    global READ, WRITE\n    READ, WRITE = os.pipe()\n",
        "os.write(WRITE, b'1')",
        "os.read(READ, 1)",
        after_start="    os.close(WRITE)\n",
        impossible=(
            ("exception", _EOF),
            ("signal", _EOF),
            ("exit", _EOF),
            ("never_started", _EOF),
        ),
        medium=True,
    ),
    Primitive(
        "socket_recv",
        "process",
        ("multiprocessing", "socket"),
        "    global SERVER\n    SERVER = socket.create_server(('127.0.0.1', 0))\n",
        "conn, _ = SERVER.accept()\n    conn.sendall(b'1')",
        "client.recv(1)",
        after_start="    client = socket.create_connection(SERVER.getsockname())\n"
        "    SERVER.close()\n",
        impossible=(
            ("exception", _EOF),
            ("signal", _EOF),
            ("exit", _EOF),
            ("never_started", "main closes the only listening socket: the connection is refused"),
        ),
        medium=True,
    ),
    Primitive(
        "flock",
        "process",
        ("fcntl", "multiprocessing", "os", "tempfile", "time"),
        "    global PATH\n    PATH = os.path.join(tempfile.mkdtemp(), 'lock')\n",
        "fcntl.flock(held, fcntl.LOCK_UN)",
        "with open(PATH, 'w') as mine:\n        fcntl.flock(mine, fcntl.LOCK_EX)",
        hold="held = open(PATH, 'w')\n    fcntl.flock(held, fcntl.LOCK_EX)",
        after_start="    time.sleep(0.5)  # the provider takes the lock first\n",
        impossible=(
            ("exception", _FLOCK),
            ("signal", _FLOCK),
            ("exit", _FLOCK),
            ("never_started", "nobody holds the lock: it is granted"),
        ),
    ),
)

#: Issue 27's second part of the matrix: the primitives its first part left out.
_FULL = "the writer fills the pipe's 64 KiB first: "
_ENDS_WITH_TASK = "the pool's shutdown ends when its task ends, however it ends"
_CHILD_OWN = "a child program's own waits are the other cells, seen in its own process"
_POSIX_LOCK = "SQLite's POSIX lock is the process's: the kernel releases it when it ends"
_EPIPE = "main keeps no reader: the write fails with EPIPE once the provider is gone"
_NO_CONNECT = "nothing but a connection ends accept(): an orphan changes nothing"

SECOND_PART: tuple[Primitive, ...] = (
    Primitive(
        "queue_put",
        "thread",
        ("queue", "threading"),
        "    global QUEUE\n    QUEUE = queue.Queue(maxsize=1)\n    QUEUE.put(1)\n",
        "QUEUE.get()",
        "QUEUE.put(2)",
        impossible=_THREAD_COMMON,
    ),
    Primitive(
        "executor_shutdown",
        "executor",
        ("concurrent.futures", "threading"),
        "    global POOL\n    POOL = concurrent.futures.ThreadPoolExecutor(1)\n",
        "return 1",
        "POOL.shutdown(wait=True)",
        impossible=(
            *_THREAD_COMMON,
            ("exception", _ENDS_WITH_TASK),
            ("exit", _ENDS_WITH_TASK),
            ("never_started", "the executor starts its own threads"),
        ),
    ),
    Primitive(
        "exit_join",
        "exit",
        ("threading",),
        "",
        "pass",
        "return  # the interpreter joins every non-daemon thread at exit",
        impossible=(
            *_THREAD_COMMON,
            ("exception", _ENDS_WITH_THREAD),
            ("exit", _ENDS_WITH_THREAD),
            ("never_started", "the interpreter joins started threads only"),
        ),
    ),
    Primitive(
        "asyncio_future",
        "asyncio",
        ("asyncio", "threading"),
        "",
        "LOOP.call_soon_threadsafe(FUTURE.set_result, 1)",
        "asyncio.run(waiting(start))",
        module=(
            "\n\nasync def waiting(start):\n"
            "    global LOOP, FUTURE\n"
            "    LOOP = asyncio.get_running_loop()\n"
            "    FUTURE = LOOP.create_future()\n"
            "    start()\n"
            "    await FUTURE  # HANG: waiter\n"
        ),
        impossible=_THREAD_COMMON,
    ),
    Primitive(
        "pool_map",
        "pool_call",
        ("multiprocessing",),
        "    global POOL\n    POOL = multiprocessing.Pool(1)\n",
        "return 1",
        "POOL.starmap(provider, [()])",
        impossible=(
            ("exit", "a return is the result: the wait ends"),
            ("never_started", _POOL_STARTS),
            ("outside", _NO_EOF),
        ),
        outcome=(
            ("exception", _CARRIED),
            ("signal", ("hung", "data.worker_killed", ("sink", "waiter"))),
        ),
    ),
    Primitive(
        "manager_queue_get",
        "process",
        ("multiprocessing",),
        "    global MANAGER, QUEUE\n    MANAGER = multiprocessing.Manager()\n"
        "    QUEUE = MANAGER.Queue()\n",
        "QUEUE.put(1)",
        "QUEUE.get()",
        impossible=(("outside", _NO_EOF),),
    ),
    Primitive(
        "os_pipe_write",
        "process",
        ("multiprocessing", "os"),
        "    global READ, WRITE\n    READ, WRITE = os.pipe()\n",
        "os.read(READ, 1 << 20)",
        "os.write(WRITE, b'x' * (1 << 20))",
        after_start="    os.close(READ)\n",
        impossible=(
            ("exception", _EPIPE),
            ("signal", _EPIPE),
            ("exit", _EPIPE),
            ("never_started", _EPIPE),
        ),
        medium=True,
    ),
    Primitive(
        "socket_accept",
        "process",
        ("multiprocessing", "socket"),
        "    global SERVER\n    SERVER = socket.create_server(('127.0.0.1', 0))\n",
        "socket.create_connection(SERVER.getsockname()).close()",
        "SERVER.accept()",
        impossible=(("outside", _NO_CONNECT),),
        medium=True,
    ),
    Primitive(
        "selector_read",
        "process",
        ("multiprocessing", "os", "selectors"),
        "    global READ, WRITE\n    READ, WRITE = os.pipe()\n",
        "os.write(WRITE, b'1')",
        "selector = selectors.DefaultSelector()\n    selector.register(READ, "
        "selectors.EVENT_READ)\n    selector.select()",
        after_start="    os.close(WRITE)\n",
        impossible=(
            ("exception", _EOF),
            ("signal", _EOF),
            ("exit", _EOF),
            ("never_started", _EOF),
        ),
        medium=True,
    ),
    Primitive(
        "sqlite_write",
        "process",
        ("multiprocessing", "os", "sqlite3", "tempfile", "time"),
        "    global PATH\n    PATH = os.path.join(tempfile.mkdtemp(), 'db.sqlite')\n"
        "    sqlite3.connect(PATH).execute('CREATE TABLE t (x)')\n",
        "db.commit()",
        "sqlite3.connect(PATH, timeout=3600).execute('BEGIN IMMEDIATE')",
        hold="db = sqlite3.connect(PATH)\n    db.execute('BEGIN IMMEDIATE')",
        after_start="    time.sleep(0.5)  # the provider takes the write lock first\n",
        impossible=(
            ("exception", _POSIX_LOCK),
            ("signal", _POSIX_LOCK),
            ("exit", _POSIX_LOCK),
            ("never_started", "nobody holds the write lock: it is granted"),
            ("outside", "a POSIX lock is not inherited by a fork: the orphan holds nothing"),
        ),
    ),
    Primitive(
        "subprocess_wait",
        "child",
        ("os", "subprocess", "sys"),
        "",
        "pass",
        "child.wait()",
        fate_lines=(("cycle", "os.write(1, b'x' * (1 << 20))  # HANG: sink"),),
        # The taxonomy names a child blocked on a full pipe its parent does not read blocked
        # I/O, as the suite's programs of it (u_popen_extractor_wait) do.
        outcome=(("cycle", ("hung", "process.blocked_io", ("sink", "waiter"))),),
        impossible=(
            ("exception", _ENDS_WITH_PROCESS),
            ("signal", _ENDS_WITH_PROCESS),
            ("exit", _ENDS_WITH_PROCESS),
            ("chain", _CHILD_OWN),
            ("never_started", "Popen starts the child"),
            ("outside", "wait() ends when the child ends, whoever keeps its pipes"),
        ),
    ),
    Primitive(
        "subprocess_communicate",
        "child",
        ("os", "subprocess", "sys", "time"),
        "",
        "print('done', flush=True)",
        "child.communicate()",
        impossible=(
            ("exception", _EOF),
            ("signal", _EOF),
            ("exit", _EOF),
            ("chain", _CHILD_OWN),
            ("cycle", "communicate() reads while it waits: the pipe never fills"),
            ("never_started", "Popen starts the child"),
        ),
        medium=True,
    ),
)

#: The training loop's own wait: a DataLoader's worker provides the batch, and the loader
#: watches its workers, so a worker's death is an error in the loop, not a hang.
LOADER = Primitive(
    "dataloader_next",
    "loader",
    ("multiprocessing", "torch.utils.data"),
    "",
    "return",
    "next(iter(loader))",
    module=(
        "\n\nclass Provided(torch.utils.data.Dataset):\n"
        "    def __len__(self):\n        return 4\n\n"
        "    def __getitem__(self, index):\n        provider()\n        return index\n"
    ),
    impossible=(
        ("never_started", "the loader starts its own workers"),
        ("outside", "the loader reads its own queue, which no orphan feeds or keeps"),
    ),
    outcome=(
        ("exception", ("failed", "process.exception", ("sink",))),
        ("signal", ("failed", "data.worker_killed", ("sink", "waiter"))),
        ("exit", ("failed", "data.worker_killed", ("sink", "waiter"))),
        ("chain", ("hung", "data.pipeline_stall", ("sink",))),
        ("cycle", ("hung", "data.pipeline_stall", ("sink", "waiter"))),
    ),
    fate_lines=(("exit", "os._exit(0)  # HANG: sink"),),
    # The loader checks its workers every 5 s (MP_STATUS_CHECK_INTERVAL) and raises for one
    # that is gone: a threshold above that lets it, whatever the load.
    hang_timeout_s=10.0,
)

PRIMITIVES = PRIMITIVES + SECOND_PART + (LOADER,)


def _fate_line(fate: str) -> str:
    """The provider's act, in its function's body, before it would provide."""
    return {
        "exception": 'raise KeyError("label")  # HANG: sink',
        "signal": "os.kill(os.getpid(), signal.SIGKILL)  # HANG: sink",
        "exit": "return  # HANG: sink",
        "chain": "READY.wait()  # the preparer never gets there",
        "cycle": "GUARD.acquire()  # HANG: sink",
        "outside": "leave_an_orphan()\n    return",
    }.get(fate, "")


def _guard_kind(primitive: Primitive) -> str:
    return (
        "threading"
        if primitive.kind in ("thread", "executor", "exit", "asyncio")
        and ("multiprocessing" not in primitive.imports)
        else "multiprocessing"
    )


def _orphan(keeps: str) -> str:
    kept = f"            kept = {keeps}\n" if keeps else ""
    return (
        "\n\ndef leave_an_orphan():\n"
        "    # A grandchild that keeps every inherited descriptor open and lives on after its\n"
        "    # parent returns: a daemon outside the job's tree.\n"
        "    if os.fork() == 0:\n"
        "        os.setsid()\n"
        "        if os.fork() == 0:\n" + kept + "            time.sleep(3600)  # HANG: sink\n"
        "        os._exit(0)\n"
        "    time.sleep(0.5)\n"
    )


def _preparer() -> str:
    return (
        "\n\ndef prepare():\n"
        '    """Should set READY; dies first."""\n'
        '    raise KeyError("label")  # HANG: sink\n'
        "    READY.set()\n"
    )


def program_text(primitive: Primitive, fate: str) -> str:
    """The program of one cell of the matrix."""
    uses = _guard_kind(primitive)
    imports = {*primitive.imports, "time"}
    if fate in ("signal", "outside"):
        imports |= {"os", "signal"}
    fate_line = dict(primitive.fate_lines).get(fate, _fate_line(fate))
    if "os." in fate_line:
        imports.add("os")
    if "GUARD" in fate_line or "READY" in fate_line:
        imports.add(uses)
    header = (
        f'"""Wait matrix, cell {primitive.name} x {fate} (generated by '
        "tests/scenarios/wait_matrix.py: do not\nedit, generate again). The main thread waits "
        f"on {primitive.name}; its provider ({primitive.kind}) meets\nthe fate '{fate}' "
        'first. The report must name the line marked as `wait_matrix.EXPECTED` says."""\n\n'
    )
    lines = "\n".join(f"import {n}" for n in sorted(imports))
    body = []
    if primitive.hold:
        body.append(f"    {primitive.hold}")
    if fate_line:
        body.append(f"    {fate_line}")
    provide = primitive.provide
    body.append(f"    {provide}")
    provider = "\n\ndef provider():\n" + "\n".join(body) + "\n"
    extra = ""
    if fate == "outside":
        extra += _orphan(primitive.orphan_keeps)
    if fate == "chain":
        extra += _preparer()
    setup = ""  # what the provider's fate uses first: a pool's workers inherit it
    if "READY" in fate_line:
        setup += f"    global READY\n    READY = {uses}.Event()\n"
    if "GUARD" in fate_line:
        setup += f"    global GUARD\n    GUARD = {uses}.Lock()\n    GUARD.acquire()\n"
    setup += primitive.setup
    start = _start(primitive, fate, uses)
    main = (
        "\n\ndef main():\n"
        + setup
        + start
        + primitive.after_start
        + _indent_wait(primitive.wait)
        + '    print("the wait ended", flush=True)\n'
    )
    tail = '\n\nif __name__ == "__main__":\n    main()\n'
    if primitive.kind == "child":
        tail = (
            '\n\nif __name__ == "__main__":\n'
            "    if sys.argv[1:] == ['provider']:\n        provider()\n    else:\n        main()\n"
        )
    return header + lines + "\n" + primitive.module + extra + provider + main + tail


def _indent_wait(wait: str) -> str:
    first, *rest = wait.split("\n")
    if rest:
        return f"    {first}\n" + "\n".join(f"{r}  # HANG: waiter" for r in rest) + "\n"
    return f"    {first}  # HANG: waiter\n"


def _start(primitive: Primitive, fate: str, uses: str) -> str:
    """Main's lines that start the provider (and the preparer of a chain)."""
    text = ""
    if fate == "chain":
        text += (
            f"    {uses}.{'Thread' if uses == 'threading' else 'Process'}(target=prepare).start()\n"
        )
    if primitive.kind == "pool":
        return text + "    result = POOL.apply_async(provider)\n"
    if primitive.kind == "pool_call":
        return text
    if primitive.kind == "loader":
        return text + "    loader = torch.utils.data.DataLoader(Provided(), num_workers=1)\n"
    if primitive.kind == "executor":
        return text + "    future = POOL.submit(provider)\n"
    if primitive.kind == "child":
        return text + (
            "    child = subprocess.Popen([sys.executable, __file__, 'provider'], "
            "stdout=subprocess.PIPE)\n"
        )
    if primitive.kind == "asyncio":
        create = "    provider_thread = threading.Thread(target=provider)"
        if fate == "never_started":
            return text + create + "  # HANG: sink\n    start = lambda: None  # noqa: E731\n"
        return text + create + "\n    start = provider_thread.start\n"
    if primitive.kind in ("thread", "exit"):
        name = "provider_thread"
        create = f"    {name} = threading.Thread(target=provider)"
    else:
        name = "provider_process"
        create = f"    {name} = multiprocessing.Process(target=provider)"
    if fate == "never_started":
        return text + create + "  # HANG: sink\n"
    return text + create + f"\n    {name}.start()\n"


def cells() -> list[tuple[Primitive, str]]:
    """Every (primitive, fate) that can exist."""
    return [(p, fate) for p in PRIMITIVES for fate in FATES if fate not in dict(p.impossible)]


def impossible_cells() -> list[tuple[str, str, str]]:
    """(primitive, fate, why) for each cell that cannot exist."""
    return [(p.name, fate, why) for p in PRIMITIVES for fate, why in p.impossible]


def cell_name(primitive: Primitive, fate: str) -> str:
    return f"w_{primitive.name}_{fate}"


def expectation(primitive: Primitive, fate: str) -> tuple[str, str, tuple[str, ...]]:
    """(verdict, category, markers) of one cell."""
    special = dict(primitive.outcome)
    if fate in special:
        return special[fate]
    category, markers = (THROUGH_A_MEDIUM if primitive.medium else EXPECTED)[fate]
    return "hung", category, markers


FIRST_TRIES = Path(__file__).parent / "wait_matrix_first_try.json"

#: Cells still wrong, with what hangdoctor says of them.
KNOWN_MISSES: dict[str, str] = {}


def first_tries() -> dict[str, str]:
    """What hangdoctor said of each cell the first time it ran (before issue 27's changes)."""
    loaded: dict[str, str] = json.loads(FIRST_TRIES.read_text())
    return loaded


def scenarios() -> tuple[Scenario, ...]:
    """Every cell of the matrix as a scenario of the catalogue; the cells still wrong are known
    misses, with what hangdoctor says of them."""
    found = []
    tries = first_tries()
    for primitive, fate in cells():
        verdict, category, markers = expectation(primitive, fate)
        name = cell_name(primitive, fate)
        found.append(
            Scenario(
                name=name,
                program=f"waits/{name}.py",
                category=category,
                verdict=verdict,
                markers=markers,
                hang_timeout_s=primitive.hang_timeout_s,
                needs_torch=primitive.kind == "loader",
                first_try=tries.get(name),
                xfail=f"known miss: {KNOWN_MISSES[name]}" if name in KNOWN_MISSES else None,
            )
        )
    return tuple(found)


def expected_files() -> dict[Path, str]:
    return {FOLDER / f"{cell_name(p, fate)}.py": program_text(p, fate) for p, fate in cells()}


def main() -> int:
    return write_or_check(__doc__.splitlines()[0], FOLDER, expected_files())


if __name__ == "__main__":
    sys.exit(main())
