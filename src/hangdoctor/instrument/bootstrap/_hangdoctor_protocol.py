"""The boundary between the in-process probe and hangdoctor, written once: the environment
variable that names the status folder, the files each side writes there, the request the
supervisor drops, the signal that asks for stacks, and torch's collectives.

Both sides import this module: the probe and `sitecustomize` in the job's interpreter (any
Python >= 3.8, hangdoctor not importable, so: stdlib only, no syntax newer than 3.8, nothing
run at import), and hangdoctor itself (`instrument`, `probes/`, `analysis/`, `lint/`) as
`hangdoctor.instrument.bootstrap._hangdoctor_protocol`.
"""

# Annotations are strings, and `types` is imported for the type checker only (see sitecustomize).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import ModuleType

#: The folder the probe writes into, set by `hangdoctor run` (instrument.instrumented_env).
STATUS_DIR_ENV = "HANGDOCTOR_STATUS_DIR"
#: Set by `hangdoctor run` beside the status folder: the job is supervised, so `watch()` in it
#: starts no watchdog of its own and the SDK's calls feed `run`'s supervisor instead.
SUPERVISED_ENV = "HANGDOCTOR_SUPERVISED"
#: The probe's module name, loaded by `sitecustomize` from beside it.
PROBE_MODULE = "_hangdoctor_probe"
#: The probe's parts, one job each, which it loads from beside it in this order (each imports
#: only those before it). A stack frame in any of these files is the probe's own.
PROBE_PARTS = (
    "_hangdoctor_status",  # the progress counters and their JSON
    "_hangdoctor_state",  # what several parts set and read, in one object
    "_hangdoctor_files",  # the files it writes into the status folder
    "_hangdoctor_stacks",  # stacks without ptrace: faulthandler, dead threads
    "_hangdoctor_flight_recorder",  # torch's Flight Recorder, on request
    "_hangdoctor_tasks",  # asyncio's tasks, on request
    "_hangdoctor_kernel",  # the kernel's view of its own threads, on request
    "_hangdoctor_objects",  # which object `self.lock` is, on request
    "_hangdoctor_writer",  # the status writer thread
    "_hangdoctor_hooks",  # the torch hooks that count progress
    "_hangdoctor_losses",  # the torch hook that reads losses no backward() sees
    "_hangdoctor_frameworks",  # what the JAX and TensorFlow hooks count
    "_hangdoctor_step_losses",  # the losses JAX's and TensorFlow's steps return
    "_hangdoctor_jax",  # the JAX hooks: jitted calls, optax, checkpoints, XLA compiles
    "_hangdoctor_tf",  # the TensorFlow and Keras hooks: tf.function, tf.data, batch ends
    "_hangdoctor_sdk",  # what the job says itself: heartbeats, phases, marks
)
#: Dropped by the supervisor at a hang: every instrumented process then answers it (its
#: Flight Recorder, its asyncio tasks, its threads' system calls, its frames' objects); its
#: modification time tells one request from the next.
REQUEST_FILE = "flight-recorder.request"
#: Dropped by `run` when it looks at an idle job for a proof that it is hung: only the
#: frames' objects are asked for (`_hangdoctor_objects`), nothing that costs the job work
#: (a Flight Recorder dump computes and writes, and would pass for the job's own activity).
OBJECTS_REQUEST_FILE = "objects.request"
#: The real-time signal (SIGRTMIN + this) that makes faulthandler write a process's stacks.
STACK_SIGNAL_OFFSET = 6

STATUS_PREFIX, STATUS_SUFFIX = "status-", ".json"
FLIGHT_RECORDER_PREFIX, FLIGHT_RECORDER_SUFFIX = "fr-", ".json"
TASKS_PREFIX, TASKS_SUFFIX = "tasks-", ".json"
KERNEL_PREFIX, KERNEL_SUFFIX = "kernel-", ".json"
OBJECTS_PREFIX, OBJECTS_SUFFIX = "objects-", ".json"
STACKS_PREFIX, STACKS_SUFFIX = "stacks-", ".txt"
THREAD_MAP_PREFIX, THREAD_MAP_SUFFIX = "threads-", ".json"
FAULT_PREFIX, FAULT_SUFFIX = "fault-", ".txt"
STOPPED_PREFIX, STOPPED_SUFFIX = "stopped-", ".txt"
DIED_PREFIX, DIED_SUFFIX = "died-", ".txt"
RAISED_PREFIX, RAISED_SUFFIX = "raised-", ".txt"
ENDED_PREFIX, ENDED_SUFFIX = "ended-", ".txt"
OFFLOOP_PREFIX, OFFLOOP_SUFFIX = "offloop-", ".txt"


def status_file(pid: int) -> str:
    """The progress counters of one process (hangdoctor's ProgressStatus, as JSON)."""
    return STATUS_PREFIX + str(pid) + STATUS_SUFFIX


def flight_recorder_file(pid: int) -> str:
    """One rank's Flight Recorder ring buffer, written on request."""
    return FLIGHT_RECORDER_PREFIX + str(pid) + FLIGHT_RECORDER_SUFFIX


def tasks_file(pid: int) -> str:
    """One process's asyncio tasks, written on request."""
    return TASKS_PREFIX + str(pid) + TASKS_SUFFIX


def kernel_file(pid: int) -> str:
    """One process's threads as the kernel shows them to the process itself, on request."""
    return KERNEL_PREFIX + str(pid) + KERNEL_SUFFIX


def objects_file(pid: int) -> str:
    """The synchronisation objects one process's frames hold as attributes, on request."""
    return OBJECTS_PREFIX + str(pid) + OBJECTS_SUFFIX


def stacks_file(pid: int) -> str:
    """Where faulthandler appends a process's stacks when it gets the stack signal."""
    return STACKS_PREFIX + str(pid) + STACKS_SUFFIX


def thread_map_file(pid: int) -> str:
    """The stack signal's number and each thread's pthread id -> kernel thread id."""
    return THREAD_MAP_PREFIX + str(pid) + THREAD_MAP_SUFFIX


def fault_file(pid: int) -> str:
    """Where faulthandler writes the traceback of a fatal signal (SIGSEGV, SIGABRT, ...)."""
    return FAULT_PREFIX + str(pid) + FAULT_SUFFIX


def stopped_file(pid: int) -> str:
    """Where faulthandler writes the stacks of a process stopped by SIGTERM."""
    return STOPPED_PREFIX + str(pid) + STOPPED_SUFFIX


def raised_file(pid: int) -> str:
    """Where a process writes the uncaught exception that ends it, whole, before Python prints
    it (the printed one can be torn or lost)."""
    return RAISED_PREFIX + str(pid) + RAISED_SUFFIX


def offloop_file(pid: int) -> str:
    """Where this process scheduled work on an asyncio event loop from a thread other than the
    loop's own (`call_soon`, which `Future.set_result` uses, is not thread-safe): a line each,
    `<thread name>\t<file>\t<line>\t<function>` of the call in the job's code."""
    return OFFLOOP_PREFIX + str(pid) + OFFLOOP_SUFFIX


def ended_file(pid: int) -> str:
    """The processes this one ended with `Process.terminate()` or `kill()`: a line each,
    `<pid>\t<signal>\t<file>\t<line>\t<function>` of the call in the job's code."""
    return ENDED_PREFIX + str(pid) + ENDED_SUFFIX


def died_file(pid: int) -> str:
    """The tracebacks of threads that died of an exception."""
    return DIED_PREFIX + str(pid) + DIED_SUFFIX


def load_module(name: str, path: str) -> "ModuleType":
    """The module `name` from the file at `path`, or the one of that name already loaded: how
    `sitecustomize` loads the probe, and `watch()` (standalone/arming.py) the bootstrap's files
    under the names they have under `run`, so that both load them alike. A module whose code
    fails is taken out of sys.modules again, so that a later call starts afresh."""
    import sys

    module = sys.modules.get(name)
    if module is not None:
        return module
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(name)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


def glob_of(prefix: str, suffix: str) -> str:
    """The files of every process of one kind, e.g. `status-*.json`."""
    return prefix + "*" + suffix


#: torch.distributed's collectives every rank of a group calls (torch 2.13 adds the `*_single`
#: names, which FSDP2 uses): the probe wraps these to count calls and sequence numbers.
COLLECTIVES = (
    "all_reduce", "all_gather", "all_gather_into_tensor", "all_gather_object", "reduce_scatter",
    "reduce_scatter_tensor", "broadcast", "broadcast_object_list", "reduce", "barrier",
    "all_to_all", "all_to_all_single", "gather", "scatter", "monitored_barrier",
    "all_gather_single", "reduce_scatter_single",
)
#: Collectives the probe leaves unwrapped: object variants and the older private names.
OTHER_COLLECTIVES = ("gather_object", "scatter_object_list", "_all_gather_base",
                     "_reduce_scatter_base")
#: Coalesced variants, deprecated in torch 2.x.
COALESCED_COLLECTIVES = ("all_gather_coalesced", "all_reduce_coalesced")
#: Point-to-point operations: a rank waits in them for one peer, not for the group.
POINT_TO_POINT = ("send", "recv")
