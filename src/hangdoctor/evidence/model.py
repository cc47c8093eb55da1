"""The evidence model: plain typed observations, serialisable to JSON and back.

Probes produce these objects and nothing else; rules read them and nothing else. A saved bundle
can therefore be diagnosed again later, on another machine, with the same result.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

BUNDLE_FORMAT = "hangdoctor-bundle/1"


class Evidence(BaseModel):
    """Base for every evidence record: immutable, and strict about unknown fields on load."""

    model_config = ConfigDict(frozen=True, extra="forbid")


class LocalVariable(Evidence):
    """One local variable of a Python frame, as py-spy printed it (already redacted)."""

    name: str
    repr: str | None = None
    addr: int | None = Field(default=None, description="address of the object, identifies it")
    arg: bool = False


class HeldContext(Evidence):
    """A context manager entered, or a lock acquired, that is still open at a frame's line."""

    expression: str = Field(description="its source text, e.g. `self.lock` or `open(path)`")
    line: int = Field(description="the line that entered or acquired it")
    how: str = Field(default="with", description="`with` block, or explicit `acquire()` call")


class LoopExit(Evidence):
    """A statement that leaves a loop before its end (`break`, `return`)."""

    line: int
    code: str | None = None
    condition: str | None = Field(default=None, description="the `if` it runs under, if any")


class Frame(Evidence):
    """One frame of a stack, innermost first in a thread's list."""

    function: str
    file: str
    line: int
    native: bool = Field(default=False, description="a native (C/C++) frame from --native")
    code: str | None = Field(default=None, description="the source line, when it could be read")
    locals: tuple[LocalVariable, ...] = ()
    attributes: tuple[LocalVariable, ...] = Field(
        default=(),
        description="synchronisation objects that the locals hold as attributes (`self.lock`), "
        "with their addresses, as the process itself named them at the capture",
    )
    held: tuple[HeldContext, ...] = Field(
        default=(),
        description="expressions of context managers entered and locks acquired, still open at "
        "this line (from the source)",
    )
    acquiring: tuple[str, ...] = Field(
        default=(), description="lock-like expressions this very line enters or acquires"
    )
    guards: tuple[str, ...] = Field(
        default=(),
        description="conditions of the `if` blocks around this line, outermost first "
        "(`not (...)` for an else branch): why only some ranks may get here",
    )
    loops: tuple[str, ...] = Field(
        default=(), description="headers of the loops around this line, outermost first"
    )
    loop_lines: tuple[int, ...] = Field(
        default=(), description="the lines of those loop headers, outermost first"
    )
    loop_exits: tuple[LoopExit, ...] = Field(
        default=(), description="the `break`s and `return`s that leave those loops early"
    )


class KernelThreadState(Evidence):
    """What the kernel says a thread is doing, read from /proc before any ptrace attach."""

    state: str = Field(description="R running, S sleeping, D disk sleep, T stopped, Z zombie")
    wchan: str | None = Field(default=None, description="kernel function it sleeps in")
    syscall: int | None = Field(default=None, description="syscall number, None when running")
    syscall_name: str | None = None
    syscall_args: tuple[int, ...] = ()
    cpu_seconds: float = Field(default=0.0, description="user + system CPU time so far")


class PythonThread(Evidence):
    """A thread as py-spy saw it."""

    thread_id: int | None = None
    name: str | None = None
    active: bool = False
    owns_gil: bool = False
    frames: tuple[Frame, ...] = ()


class OwnedLock(Evidence):
    """A reentrant lock a thread owns, as its process said at a request (an RLock records its
    owner; a plain Lock does not): held, whether or not a frame shows where it was taken."""

    addr: int = Field(description="the lock object's address")
    count: int = Field(default=1, description="how many times the owner holds it")
    kind: str = Field(default="_thread.RLock", description="its type, `module.Class`")


class ThreadEvidence(Evidence):
    """One OS thread: its kernel state and, for Python processes, its Python stack."""

    tid: int
    comm: str | None = None
    kernel: KernelThreadState | None = None
    python: PythonThread | None = None
    owns: tuple[OwnedLock, ...] = Field(
        default=(), description="reentrant locks it owns, as its process said"
    )


class OpenFile(Evidence):
    """An open file descriptor: what it points to and how it was opened."""

    fd: int
    target: str = Field(description="readlink of /proc/PID/fd/N: a path, pipe:[ino], socket:[ino]")
    mode: str | None = Field(default=None, description="r, w or rw, from fdinfo flags")
    locked: bool | None = Field(
        default=None,
        description="whether the open file holds a file lock (flock, fcntl), from fdinfo's "
        "`lock:` lines; None where fdinfo was not read",
    )


class RankClass(Evidence):
    """The processes one process stands for, in a job analysed by class (`nodes.classes`):
    those whose threads, progress and Flight Recorder showed the same as its own."""

    key: str = Field(description="what the class shares, as a digest")
    size: int = Field(default=1, description="how many processes it stands for, itself included")
    ranks: tuple[tuple[int, int], ...] = Field(
        default=(), description="the ranks of those processes, as inclusive ranges"
    )
    nodes: int = Field(default=1, description="how many nodes they run on")


class ProcessEvidence(Evidence):
    """One process of the job's tree at one moment."""

    pid: int
    ppid: int | None = None
    name: str | None = None
    exe: str | None = None
    cmdline: tuple[str, ...] = ()
    cwd: str | None = None
    environ: dict[str, str] = Field(
        default_factory=dict, description="selected variables only, secrets redacted"
    )
    state: str | None = None
    create_time: float | None = None
    cpu_seconds: float | None = None
    rss_bytes: int | None = None
    is_python: bool | None = None
    threads: tuple[ThreadEvidence, ...] = ()
    open_files: tuple[OpenFile, ...] = ()
    stacks_sampled: bool = Field(
        default=False, description="whether Python stacks were read in this snapshot"
    )
    outside_job: bool = Field(
        default=False,
        description="no descendant of the job's root, but holding the other end of a pipe, "
        "FIFO or connection that a job thread waits on (a daemon the job left, say)",
    )
    host: str | None = Field(
        default=None, description="the node it runs on, in a view merged from several nodes"
    )
    node: str | None = Field(
        default=None, description="that node's rank (or name) in the job, in such a view"
    )
    host_pid: int | None = Field(
        default=None,
        description="its pid on that node, when the merged view renumbered it (pids of two "
        "nodes can be the same)",
    )
    rank_class: RankClass | None = Field(
        default=None,
        description="in a job analysed by class, the processes this one stands for",
    )


class GpuSample(Evidence):
    """One GPU in one sample of the light timeline (NVML)."""

    index: int
    utilization_percent: float | None = None
    memory_used_bytes: int | None = None
    memory_total_bytes: int | None = None


class Snapshot(Evidence):
    """The whole tree at one moment."""

    elapsed_s: float = Field(description="seconds since the capture started")
    wall_time: float = Field(description="Unix time of this snapshot")
    processes: tuple[ProcessEvidence, ...] = ()
    gpus: tuple[GpuSample, ...] = Field(
        default=(), description="NVML utilisation and memory of every GPU at this snapshot"
    )


class SocketEndpoint(Evidence):
    """A socket from /proc/net, keyed by inode, so a blocked read can say where it reads from."""

    inode: int
    protocol: str
    local: str | None = None
    remote: str | None = None
    state: str | None = None
    path: str | None = None
    peer: int | None = Field(
        default=None, description="a connected unix socket: its peer's inode (`ss -x`)"
    )


class ProbeError(Evidence):
    """A probe that could not do its work; other probes went on."""

    probe: str
    pid: int | None = None
    kind: str = Field(
        description="permission, missing_tool, exited, timeout, not_python, failed, unavailable"
    )
    message: str
    help: str | None = Field(default=None, description="how to allow it, when there is a way")


class SystemInfo(Evidence):
    """The host, so that a bundle read elsewhere still says where it came from."""

    hostname: str | None = None
    kernel: str | None = None
    machine: str | None = None
    cpu_count: int | None = None
    memory_total_bytes: int | None = None
    python: str | None = None
    py_spy: str | None = None


class CollectiveCall(Evidence):
    """One torch.distributed collective a rank called from Python, as the instrumentation
    noted it: the ranks' n-th calls on a group must be the same operation, so the first number
    where they differ is where the ranks fell out of step (often long before they stop)."""

    group: str = Field(description="the process group's name (`0`: the default group)")
    seq: int = Field(description="its number among this rank's calls on that group, from 1")
    op: str = Field(description="the torch.distributed function, e.g. all_reduce")
    sizes: str | None = Field(default=None, description="the input tensor's shape, as text")
    site: Frame | None = Field(
        default=None,
        description="the innermost frame of the user's "
        "code that made the call (outside torch, site-packages and "
        "the standard library), its source context filled in by the "
        "supervisor",
    )
    callers: tuple[Frame, ...] = Field(
        default=(),
        description="the user's frames further out "
        "that led to `site` (innermost first, at most two)",
    )


class CollectiveSite(Evidence):
    """How often a rank called one collective from one line of its code: a call one rank made
    and another never did outlives the ring of recent calls in a long run."""

    group: str
    op: str
    site: Frame
    callers: tuple[Frame, ...] = Field(
        default=(),
        description="the user's frames further out "
        "that led to `site` (a line and its callers make a site)",
    )
    calls: int = Field(description="how many times")
    first_seq: int = Field(description="the number (in `group`) of the first of those calls")
    last_seq: int = Field(description="the number of the last")


class JobPhase(Evidence):
    """A phase the job said it was in (`with hangdoctor.phase(...)`), with its own budget."""

    name: str
    budget_s: float | None = Field(
        default=None, description="seconds it may go without progress; None: the usual threshold"
    )
    entered_at: float = Field(description="Unix time")


class JobMark(Evidence):
    """A moment the job named (`hangdoctor.mark("after forward")`)."""

    at: float = Field(description="Unix time")
    text: str


class Compiling(Evidence):
    """A compilation an instrumented process says it is running (JAX, TensorFlow)."""

    what: str = Field(description="what compiles, e.g. `jax.jit train_step`")
    since: float = Field(description="Unix time it started")


class EndlessLoop(Evidence):
    """A loop of the framework's that the process runs and that cannot end by itself (Keras
    evaluating a dataset that repeats for ever, with no number of steps): its batches are not
    progress."""

    what: str = Field(description="what runs, e.g. `keras evaluate()`")
    why: str = Field(description="why it cannot end, in the framework's terms")
    since: float = Field(description="Unix time it started")
    batches: int = Field(default=0, description="steps it has run since, not counted as progress")
    site: Frame | None = Field(
        default=None,
        description="the user's call that started it (`model.fit(...)`): the line that passes "
        "`argument` where the call spans several",
    )
    argument: str | None = Field(
        default=None,
        description="the argument of that call that would have ended it (`validation_steps`)",
    )


class ProgressStatus(Evidence):
    """Training progress one instrumented process reports about itself (hangdoctor.instrument).

    Written atomically as `status-<pid>.json` into $HANGDOCTOR_STATUS_DIR; times are Unix times.
    """

    pid: int
    rank: int | None = None
    world_size: int | None = Field(default=None, description="the process group's size")
    updated_at: float
    write_chars: int | None = Field(
        default=None,
        description="bytes it wrote by any call, from its own /proc/self/io (which a supervisor "
        "without ptrace may not read), noted in steps of 64 KiB",
    )
    read_bytes: int | None = Field(
        default=None, description="bytes it read from storage, from its own /proc/self/io"
    )
    steps: int = Field(
        default=0,
        description="training steps taken: torch optimizer steps, and the JAX and TensorFlow "
        "steps of `framework_steps`",
    )
    last_step_at: float | None = None
    batches: int = Field(default=0, description="batches received from DataLoaders")
    last_batch_at: float | None = None
    data_wait_s: float = Field(default=0.0, description="time spent waiting for batches")
    data_ends: int = Field(default=0, description="DataLoader iterators that ran out of data")
    collectives: int = Field(default=0, description="torch.distributed collectives started")
    last_collective: str | None = None
    in_collective: str | None = Field(default=None, description="the collective now running")
    in_collective_seq: int | None = None
    in_collective_since: float | None = None
    losses_seen: int = 0
    last_loss: float | None = None
    nonfinite_losses: int = Field(default=0, description="losses seen that were NaN or Inf")
    last_nonfinite_at: float | None = None
    limits: dict[str, int] = Field(
        default_factory=dict,
        description="the process's finite soft limits by name "
        "(file_size, open_files, address_space, processes): a script may set them itself",
    )
    exiting_at: float | None = Field(
        default=None, description="when the process began a normal exit (its atexit hooks)"
    )
    records_exit: bool = Field(
        default=False, description="watch() records how this process ends (the fields below)"
    )
    exit_code: int | None = Field(
        default=None,
        description="the exit code it was ending with: sys.exit's, 1 for an uncaught exception",
    )
    exit_traceback: str | None = Field(
        default=None, description="the uncaught exception it ended with, as Python prints it"
    )
    exit_hung: bool = Field(default=False, description="watch() ended it at a hang (exit 124)")
    exit_call: tuple[str, int, str] | None = Field(
        default=None,
        description="(file, line, function) where its main thread called sys.exit(): the line "
        "a rank that left the job early took, which leaves no traceback",
    )
    exit_site: Frame | None = Field(
        default=None, description="that call in the user's code, with its source context"
    )
    distributed_init: tuple[int | None, int | None, str, int, str] | None = Field(
        default=None,
        description="(process_id, num_processes, file, line, function) of its call of "
        "jax.distributed.initialize: the task of JAX's coordination service it registered as",
    )
    init_site: Frame | None = Field(
        default=None, description="that call in the user's code, with its source context"
    )
    last_sync_at: tuple[tuple[str, int, str], ...] = Field(
        default=(),
        description="(file, line, function) of each frame, innermost first (at "
        "most 8), of the code that last called a collective or backward() (where DDP "
        "all-reduces)",
    )
    last_sync: tuple[Frame, ...] = Field(
        default=(),
        description="those frames of the user's code with their source context, "
        "filled in by the supervisor (the loops around them, and the exits that leave those "
        "loops early)",
    )
    groups_created: int = Field(default=0, description="torch.distributed.new_group calls")
    group_sites: tuple[tuple[int, str, int, str], ...] = Field(
        default=(),
        description="(number, file, line, function) of the most recent new_group "
        "calls (at most 16): where each group was created, numbered in creation order",
    )
    collective_calls: tuple[CollectiveCall, ...] = Field(
        default=(),
        description="the most recent collectives it called from Python (at most "
        "64), oldest first, numbered per process group, with the user's call site",
    )
    collective_sites: tuple[CollectiveSite, ...] = Field(
        default=(),
        description="per process group, operation and user call site, how many "
        "collectives it called there since it started (at most 64 sites)",
    )
    heartbeats: int = Field(default=0, description="`hangdoctor.heartbeat()` calls")
    last_heartbeat_at: float | None = None
    heartbeat_step: int | None = Field(default=None, description="the step the last one named")
    phase_moves: int = Field(default=0, description="phases entered and left")
    phases: tuple[JobPhase, ...] = Field(
        default=(), description="the phases it is in (`hangdoctor.phase`), outermost first"
    )
    marks: tuple[JobMark, ...] = Field(
        default=(), description="its last marks (`hangdoctor.mark`, at most 32), oldest first"
    )
    frameworks: dict[str, str] = Field(
        default_factory=dict,
        description="the deep-learning frameworks it imported (torch, jax, jaxlib, tensorflow, "
        "keras), with the versions they say they are",
    )
    framework_steps: dict[str, int] = Field(
        default_factory=dict,
        description="its JAX and TensorFlow steps by where they were counted (`jax.jit`, "
        "`tf.function`, `keras.train_batch`, `optax.update`, ...); `steps` includes them",
    )
    endless_loop: EndlessLoop | None = Field(
        default=None,
        description="a loop of its framework that cannot end by itself, running now (its steps "
        "are not counted in `steps`)",
    )
    compiling: tuple[Compiling, ...] = Field(
        default=(),
        description="compilations running in it now (a jitted function's first call, a "
        "tf.function's tracing), oldest first: a phase under the compile budget",
    )


class ProcessSample(Evidence):
    """One process in one sample of the light timeline."""

    pid: int
    ppid: int | None = None
    cpu_seconds: float | None = None
    rss_bytes: int | None = None
    state: str | None = None
    name: str | None = Field(default=None, description="the command name (a compiler: cc1plus)")
    children_cpu_seconds: float | None = Field(
        default=None,
        description="CPU time of its children that exited and were waited for "
        "(cutime + cstime): work of processes that came and went between two samples",
    )
    read_chars: int | None = Field(
        default=None,
        description="/proc/PID/io rchar: bytes read by any read call, those of "
        "its waited-for children included",
    )
    write_chars: int | None = Field(default=None, description="/proc/PID/io wchar, likewise")
    read_bytes: int | None = Field(default=None, description="bytes fetched from storage")
    write_bytes: int | None = Field(default=None, description="bytes sent towards storage")


class RankSample(Evidence):
    """One instrumented process's progress counters in one sample of the light timeline: the
    sums alone cannot show which rank stopped first, nor how long each waited for data."""

    pid: int
    rank: int | None = None
    steps: int = 0
    batches: int = 0
    collectives: int = 0
    data_wait_s: float = Field(default=0.0, description="time spent waiting for batches so far")


class TimelineSample(Evidence):
    """What the supervisor's light sampler saw about once a second."""

    elapsed_s: float
    output_bytes: int = 0
    processes: tuple[ProcessSample, ...] = ()
    gpus: tuple[GpuSample, ...] = ()
    steps: int = Field(default=0, description="optimizer steps, summed over processes")
    batches: int = 0
    collectives: int = 0
    losses: int = Field(default=0, description="losses the instrumentation saw, summed")
    nonfinite_losses: int = Field(default=0, description="of which NaN or Inf")
    heartbeats: int = Field(default=0, description="`hangdoctor.heartbeat()` calls, summed")
    phase_moves: int = Field(default=0, description="phases entered and left, summed")
    runnable_tasks: int | None = Field(
        default=None,
        description="tasks runnable on the whole machine (/proc/stat "
        "procs_running): how much of a core a computing process can get",
    )
    cores: int | None = Field(default=None, description="CPU cores the job may run on")
    ranks: tuple[RankSample, ...] = Field(
        default=(), description="each instrumented process's own counters, per rank"
    )


class CollectiveRecord(Evidence):
    """One entry of PyTorch's Flight Recorder: a collective a rank issued."""

    seq: int = Field(description="collective_seq_id within its process group")
    op: str = Field(description="e.g. all_reduce, barrier (backend prefix removed)")
    state: str | None = None
    process_group: str | None = None
    sizes: str | None = Field(default=None, description="input sizes, as text")
    retired: bool | None = Field(
        default=None, description="whether the rank is done with it (False: still pending)"
    )


class FlightRecord(Evidence):
    """The last collectives one rank issued, from its Flight Recorder ring buffer."""

    pid: int
    rank: int | None = None
    entries: tuple[CollectiveRecord, ...] = Field(default=(), description="oldest first")
    last_enqueued: int | None = Field(
        default=None, description="the newest collective it issued, in the newest entry's group"
    )
    last_completed: int | None = Field(
        default=None,
        description="the newest collective it finished there (pg_status); "
        "enqueued > completed: the rank waits inside collective completed + 1",
    )


class AsyncTask(Evidence):
    """An asyncio task of a process whose event loop was running at the hang, as the
    instrumentation read it: a pending task's await chain (where it is suspended, which no
    stack shows), or the exception a finished task ended with."""

    pid: int
    name: str
    done: bool = False
    awaiting: tuple[Frame, ...] = Field(
        default=(), description="pending: the await chain, innermost first"
    )
    exception: str | None = Field(default=None, description="done: `Type: message`, redacted")
    raised: tuple[Frame, ...] = Field(
        default=(), description="done: its traceback, innermost first"
    )
    retrieved: bool | None = Field(
        default=None,
        description="done: whether anything read "
        "the exception (asyncio logs it only when the task is freed)",
    )


class FaultLog(Evidence):
    """What Python's faulthandler wrote when a process of the job died of a fatal signal
    (SIGSEGV, SIGBUS, SIGABRT, ...): every thread's stack at that moment."""

    pid: int
    text: str = Field(description="faulthandler's report, its last 16 KiB, redacted")
    when: str | None = Field(
        default=None,
        description="for stacks of processes that did not "
        "crash, what made them write it: `sigterm` (stopped by it), "
        "`peer_timeout` (asked when a collective timeout was printed)",
    )


class ProcessEnd(Evidence):
    """A process the job ended itself with `Process.terminate()` or `kill()`, as the
    instrumentation noted the call."""

    pid: int = Field(description="the process ended")
    signal: str
    by_pid: int = Field(description="the process that called terminate() or kill()")
    file: str
    line: int
    function: str
    via_file: str | None = Field(
        default=None,
        description="where the call was a library's (Pool's cleanup), the job's own line that "
        "led to it (the end of a `with Pool()` block): its file, line and function",
    )
    via_line: int | None = None
    via_function: str | None = None


class OffLoopCall(Evidence):
    """A place where the job scheduled work on an asyncio event loop from a thread other than
    the loop's own (`loop.call_soon`, or `Future.set_result`, which calls it): not thread-safe,
    the loop is not woken. As the instrumentation noted it, once per line."""

    pid: int
    thread: str = Field(description="the name of the thread that made the call")
    file: str
    line: int
    function: str


class ThreadDeath(Evidence):
    """A thread of the job that died of an exception, as the instrumentation recorded it: the
    traceback whole, as threading prints it (in the job's output, its other lines can land
    between the traceback's)."""

    pid: int
    text: str = Field(description="`Exception in thread NAME:` and its traceback, redacted")


class UncaughtException(Evidence):
    """The exception that ended a process of the job, as the instrumentation recorded it before
    Python printed it: whole, where the printed one may be torn (a signal handler raising
    while it prints) or lost (stderr closed)."""

    pid: int
    text: str = Field(description="the traceback as Python formats it, redacted")
    at: float | None = Field(default=None, description="when it was recorded (epoch seconds)")


class JobRecord(Evidence):
    """A supervised job's life: how it ran, how it ended, what it printed last."""

    command: tuple[str, ...] = ()
    started_at: float
    ended_at: float | None = None
    exit_code: int | None = Field(default=None, description="128+N when ended by signal N")
    signal: int | None = None
    interrupted: bool = False
    killed_by_hangdoctor: bool = False
    hang_timeout_s: float | None = Field(default=None, description="idle threshold in force")
    last_progress_s: float | None = None
    hang_declared_s: float | None = None
    hang_kind: str | None = None
    hang_threshold_s: float | None = Field(
        default=None,
        description="the quiet the hang was declared after: the idle threshold, busy_factor "
        "times it for a job that computed, a compile or phase budget, or less where proven",
    )
    hang_phase: str | None = Field(
        default=None,
        description="`compile` when the hang was declared while the job compiled "
        "(torch.compile, Triton, a C++ compiler in the tree), after the compile budget",
    )
    job_phase: str | None = Field(
        default=None,
        description="the phase the job said it was in at the hang (`hangdoctor.phase`), "
        "nested ones joined by `/`",
    )
    progress: tuple[ProgressStatus, ...] = ()
    timeline: tuple[TimelineSample, ...] = ()
    output_bytes: int = 0
    output_tail: tuple[str, ...] = Field(default=(), description="last lines, redacted")
    kernel_log: tuple[str, ...] = ()
    faults: tuple[FaultLog, ...] = Field(
        default=(), description="stacks of processes that died of a fatal signal"
    )
    stopped: tuple[FaultLog, ...] = Field(
        default=(),
        description="stacks of processes as the job failed: at the moment SIGTERM "
        "stopped them (a launcher ending the job after one rank failed), else when a peer's "
        "collective timeout appeared in the output (see `when`)",
    )
    thread_deaths: tuple[ThreadDeath, ...] = Field(
        default=(),
        description="threads that died of an exception, recorded whole by the "
        "instrumentation (`hangdoctor run` only)",
    )
    uncaught: tuple[UncaughtException, ...] = Field(
        default=(),
        description="uncaught exceptions that ended processes of the job, recorded whole by "
        "the instrumentation (`hangdoctor run` only)",
    )
    process_ends: tuple[ProcessEnd, ...] = Field(
        default=(),
        description="processes the job ended with terminate() or kill(), and where "
        "(`hangdoctor run` only)",
    )
    offloop_calls: tuple[OffLoopCall, ...] = Field(
        default=(),
        description="asyncio work scheduled from a thread other than its loop's "
        "(`hangdoctor run` only)",
    )


class CodeFinding(Evidence):
    """A hang-prone pattern that `hangdoctor lint` finds in a file of the user's code that a
    captured stack runs: what the runtime evidence cannot show (a collective called under a
    rank condition whose call has already returned) the code can."""

    rule_id: str = Field(description="the lint rule, e.g. HL101")
    category: str = Field(description="the TAXONOMY.md category the pattern leads to")
    file: str
    line: int
    function: str = "<module>"
    code: str | None = None
    message: str
    ranks: str | None = Field(
        default=None,
        description="for a call made on some ranks only: "
        "`main` (rank 0) or `other` (every rank but 0)",
    )


class CodeSetting(Evidence):
    """A setting in the user's code that shapes a distributed job (`num_nodes=2`,
    `world_size=4`), where the code on the stacks sets it: the line to change when the job
    waits for ranks the setting asks for and nothing starts."""

    name: str = Field(description="num_nodes, nnodes, world_size or max_tasks_per_child")
    value: int | None = Field(default=None, description="when the code gives a literal")
    file: str
    line: int
    function: str = "<module>"
    code: str | None = None


class NodeSeen(Evidence):
    """One node of a job that spans several, as the job-wide session saw it at a hang."""

    node: str = Field(description="its node rank (torchrun, Slurm), else its host name")
    host: str | None = None
    ranks: tuple[int, ...] = Field(default=(), description="the ranks its hangdoctor saw")
    joined: bool = Field(default=True, description="its hangdoctor joined the session")
    answered: bool = Field(default=False, description="it sent its evidence for this hang")
    silent_s: float | None = Field(
        default=None, description="seconds since its hangdoctor was last heard from"
    )
    shape: str | None = Field(
        default=None,
        description="what its ranks showed, as a digest of their classes (`nodes.classes`): "
        "nodes of the same shape are alike",
    )


class NodeClass(Evidence):
    """Nodes of a large job that are alike (`nodes.node_classes`): the same classes of ranks,
    the same state in the session. One entry for thousands of nodes, as a class of ranks is."""

    nodes: tuple[tuple[int, int], ...] = Field(description="their node ranks, as inclusive ranges")
    count: int = Field(description="how many nodes")
    shape: str | None = Field(default=None, description="what their ranks showed (NodeSeen.shape)")
    host: str | None = Field(default=None, description="the host of its first node")
    last_host: str | None = Field(default=None, description="the host of its last node")
    ranks: tuple[tuple[int, int], ...] = Field(
        default=(), description="the ranks their hangdoctors saw, as inclusive ranges"
    )
    joined: bool = True
    answered: bool = False
    silent_s: float | None = Field(
        default=None, description="the longest any of them was not heard from, in seconds"
    )


class NodesEvidence(Evidence):
    """The nodes of the job and which of them the merged view holds."""

    this_node: str
    expected: int | None = Field(default=None, description="nodes the launcher asked for")
    nodes: tuple[NodeSeen, ...] = ()
    declared_by: str | None = Field(default=None, description="the node that declared the hang")
    transport: str | None = Field(
        default=None, description="how the nodes met: the job's store, a coordinator, a directory"
    )
    omitted: int = Field(
        default=0,
        description="nodes that answered and hold no culprit, left out of the list in a report "
        "of a large job (counted, not listed)",
    )
    classes: tuple[NodeClass, ...] = Field(
        default=(),
        description="a large job's nodes that are alike, as classes with their node ranges; "
        "`nodes` then lists only the others (the outliers) one by one",
    )

    @property
    def count(self) -> int:
        """How many nodes this record accounts for: listed, in classes, or counted."""
        return len(self.nodes) + sum(c.count for c in self.classes) + self.omitted

    @property
    def answered(self) -> int:
        """How many nodes sent their evidence for this hang."""
        listed = sum(1 for n in self.nodes if n.answered)
        return listed + sum(c.count for c in self.classes if c.answered) + self.omitted

    @property
    def partial(self) -> bool:
        """Whether some node of the job is not in the merged view."""
        return self.answered < max(self.expected or 0, self.count)


class RasRank(Evidence):
    """A rank or a process as NCCL's RAS service named it."""

    rank: int | None = Field(
        default=None, description="its rank in the communicator; None: a process"
    )
    host: str | None = Field(default=None, description="its node, as RAS prints it (an IP address)")
    pid: int | None = Field(default=None, description="its process id on that node")
    cuda_devices: tuple[int, ...] = ()
    dead: bool = Field(
        default=False, description="considered dead: unreachable through the RAS network"
    )


class RasLaunchCount(Evidence):
    """Ranks of one communicator that have launched the same number of one kind of collective
    (`N ranks have launched up to operation V`): where the numbers differ, the lowest is behind."""

    operation: str = Field(description="NCCL's name of the collective, e.g. AllReduce")
    launched: int = Field(description="operations launched so far (0: none)")
    rank_count: int = Field(description="how many ranks have launched that many")
    ranks: tuple[RasRank, ...] = Field(
        default=(), description="those RAS named (it names only the few that stand out)"
    )


class RasCommunicator(Evidence):
    """One NCCL communicator in a RAS report, where RAS had something to say about it."""

    hash: str = Field(description="the communicator's hash, as RAS prints it")
    size: int | None = None
    missing: tuple[RasRank, ...] = Field(
        default=(), description="ranks RAS got no data from (their processes did not answer)"
    )
    launches: tuple[RasLaunchCount, ...] = Field(
        default=(), description="launch counts, for the collectives whose counts differ"
    )
    errors: tuple[str, ...] = Field(
        default=(), description="initialisation or asynchronous errors ranks reported"
    )


class RasReport(Evidence):
    """What NCCL's RAS service (NCCL 2.24 and later) said about the whole job when `ncclras`
    asked it at the hang: the processes and ranks that did not answer, and the ranks whose
    collective launch counts stand out. Format:
    https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting/ras.html"""

    format: str = Field(default="text", description="`text`, or `json` (NCCL 2.28 and later)")
    nccl_version: str | None = None
    unresponsive: tuple[RasRank, ...] = Field(
        default=(), description="processes RAS got no data from this time"
    )
    unresponsive_count: int = Field(
        default=0, description="how many (RAS names at most 10 of them)"
    )
    dead: tuple[RasRank, ...] = Field(default=(), description="processes considered dead")
    dead_count: int = 0
    communicators: tuple[RasCommunicator, ...] = ()
    timeouts: int = Field(
        default=0, description="communication timeouts RAS met while gathering the data"
    )
    same_job: bool | None = Field(
        default=None,
        description="whether the ranks RAS placed on this host are processes of this job "
        "(False: another job's RAS service answered); None when it placed none here",
    )
    text: str = Field(default="", description="the client's output, clipped")


class Bundle(Evidence):
    """Everything one capture saw: what `analyze` reads back."""

    format: str = BUNDLE_FORMAT
    tool_version: str
    created_at: float
    target_pid: int
    command: tuple[str, ...] = ()
    snapshots: tuple[Snapshot, ...] = ()
    sockets: tuple[SocketEndpoint, ...] = ()
    system: SystemInfo = SystemInfo()
    errors: tuple[ProbeError, ...] = ()
    timings_s: dict[str, float] = Field(
        default_factory=dict, description="time spent per probe during the capture"
    )
    job: JobRecord | None = Field(default=None, description="set by `hangdoctor run`")
    flight_records: tuple[FlightRecord, ...] = Field(
        default=(), description="PyTorch Flight Recorder dumps of the ranks, when available"
    )
    async_tasks: tuple[AsyncTask, ...] = Field(
        default=(), description="asyncio tasks of processes running an event loop (`run`)"
    )
    code_findings: tuple[CodeFinding, ...] = Field(
        default=(), description="hang-prone patterns in the user's files on the stacks"
    )
    code_settings: tuple[CodeSetting, ...] = Field(
        default=(),
        description="distributed settings (num_nodes, world_size, even_batches) in those files",
    )
    nodes: NodesEvidence | None = Field(
        default=None, description="a job of several nodes: the view merged from all of them"
    )
    nccl_ras: RasReport | None = Field(
        default=None, description="NCCL's RAS view of the whole job at the hang (`ncclras`)"
    )
